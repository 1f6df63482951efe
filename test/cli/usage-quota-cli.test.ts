/** `vrp usage` and `vrp reseller quota`, against the store a running app uses (both stores). */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { vrpOn } from '../helpers/cli.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { createManualClock } from '../helpers/manual-clock.ts';
import { testStores } from '../helpers/stores.ts';

const HOUR = 3_600_000;
const T0 = Date.UTC(2020, 0, 6, 8); // in the past: the CLI's clock (the real one) never clips it

for (const store of testStores()) {
  describe(`vrp usage and vrp reseller quota (${store})`, () => {
    let t: TestApp;
    let token: string;
    const vrp = (...args: string[]) => vrpOn(t, ...args);

    before(async () => {
      const clock = createManualClock(T0);
      t = await createTestApp({ VRP_TOKEN_TTL: String(86400) }, { worker: true, store, clock });
      token = await t.token({ reseller: 'acme' });
      await t.token({ reseller: 'idle' });
      // One service of acme: created at T0, suspended at +2 h, terminated at +3 h.
      const id = (await call(t, token, 'POST', 'service/create-order', smallOrder('cli.example.com'))).body
        .data[0].service_id;
      await call(t, token, 'POST', `service/${id}/create`);
      await waitForStatus(t, token, id, 'running');
      clock.advance(2 * HOUR);
      await call(t, token, 'POST', `service/${id}/suspend`, {});
      await waitForStatus(t, token, id, 'suspended');
      clock.advance(HOUR);
      await call(t, token, 'POST', `service/${id}/terminate`);
      await waitForStatus(t, token, id, 'terminated');
    });
    after(() => t.close());

    test('usage --json: the report, per reseller and product', async () => {
      const r = await vrp('usage', '--from', '2020-01-06', '--to', '2020-01-07T00:00:00Z', '--json');
      assert.equal(r.code, 0, r.err);
      const report = r.json();
      assert.equal(report.from, '2020-01-06T00:00:00.000Z');
      assert.equal(report.to, '2020-01-07T00:00:00.000Z');
      assert.equal(report.lines.length, 1);
      assert.equal(report.lines[0].reseller_name, 'acme');
      assert.equal(report.lines[0].product_name, 'VPS Starter');
      assert.equal(report.lines[0].service_hours, 2);
      assert.equal(report.lines[0].hdd_gb_hours, 40);
      assert.equal(report.lines[0].suspended_service_hours, 1);
      assert.equal(report.lines[0].suspended_hdd_gb_hours, 20);
    });

    test('usage --csv: the same as CSV; a period is clipped; --reseller filters', async () => {
      const r = await vrp(
        'usage',
        '--from',
        '2020-01-06T09:00:00Z',
        '--to',
        '2020-01-06T10:30+00:00',
        '--csv',
      );
      assert.equal(r.code, 0, r.err);
      const [header, line, end] = r.out.split('\r\n');
      assert.match(
        header!,
        /^from,to,reseller_id,reseller_name,product_id,product_name,services,service_hours,/,
      );
      assert.match(
        line!,
        /^2020-01-06T09:00:00\.000Z,2020-01-06T10:30:00\.000Z,[0-9a-f-]+,acme,[0-9a-f-]+,VPS Starter,1,1,1,1,20,1,10,0\.5,0\.5,0\.5,10,0\.5,5,0,0$/,
      );
      assert.equal(end, '');
      const idle = await vrp(
        'usage',
        '--from',
        '2020-01-06',
        '--to',
        '2020-01-07',
        '--reseller',
        'idle',
        '--json',
      );
      assert.deepEqual(idle.json().lines, []);
      const acme = await vrp(
        'usage',
        '--from',
        '2020-01-06',
        '--to',
        '2020-01-07',
        '--reseller',
        'acme',
        '--json',
      );
      assert.equal(acme.json().lines.length, 1);
    });

    test('usage for people: a table with the hours', async () => {
      const r = await vrp('usage', '--from', '2020-01-06', '--to', '2020-01-07');
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /^usage from 2020-01-06T00:00:00\.000Z to 2020-01-07T00:00:00\.000Z/);
      assert.match(
        r.out,
        /\nacme\tVPS Starter\t1\t2\.00\t2\.00\t2\.00\t40\.00\t2\.00\t20\.00\t1\.00\t0\.00\t0\.00\n/,
      );
      // The last line sums the lines above it (one line here: the same figures).
      assert.match(
        r.out,
        /\ntotal\t\t1\t2\.00\t2\.00\t2\.00\t40\.00\t2\.00\t20\.00\t1\.00\t0\.00\t0\.00\n?$/,
      );
      const none = await vrp('usage', '--from', '2019-01-01', '--to', '2019-02-01');
      assert.match(none.out, /\(no usage\)/);
    });

    test('usage: wrong arguments exit 2 with the reason; an unknown reseller exits 1', async () => {
      const wrong: [string[], RegExp][] = [
        [['usage', '--to', '2020-01-07'], /--from ISO and --to ISO are required/],
        [['usage', '--from', '2020-01-06'], /--from ISO and --to ISO are required/],
        [['usage', '--from', 'yesterday', '--to', '2020-01-07'], /--from must be an ISO 8601 date/],
        [['usage', '--from', '2020-01-06', '--to', '2020-02-30'], /--to must be an ISO 8601 date/],
        [['usage', '--from', '2020-01-07', '--to', '2020-01-06'], /to must be after from/],
        [
          ['usage', '--from', '2020-01-06', '--to', '2020-01-07', '--csv', '--json'],
          /--csv and --json: choose one/,
        ],
        [['usage', '--from', '2020-01-06', '--to', '2020-01-07', '--month'], /Unknown option '--month'/],
        [['usage', 'now'], /unexpected arguments: now/],
      ];
      for (const [args, message] of wrong) {
        const r = await vrp(...args);
        assert.equal(r.code, 2, args.join(' '));
        assert.match(r.err, message);
      }
      const unknown = await vrp(
        'usage',
        '--from',
        '2020-01-06',
        '--to',
        '2020-01-07',
        '--reseller',
        'nobody',
      );
      assert.equal(unknown.code, 1);
      assert.match(unknown.err, /no reseller named "nobody"/);
    });

    test('reseller quota: shows, changes the caps given, lifts one or all; the API enforces it', async () => {
      const shown = await vrp('reseller', 'quota', 'acme', '--json');
      assert.equal(shown.code, 0, shown.err);
      assert.deepEqual(shown.json(), {
        reseller: 'acme',
        quota: { services: null, cpu: null, ram: null, hdd: null, ip: null, backup: null },
        use: { services: 0, cpu: 0, ram: 0, hdd: 0, ip: 0, backup: 0 },
      });
      const set = await vrp('reseller', 'quota', 'acme', '--services', '1', '--ram', '16', '--json');
      assert.equal(set.code, 0, set.err);
      assert.deepEqual(set.json().quota, {
        services: 1,
        cpu: null,
        ram: 16,
        hdd: null,
        ip: null,
        backup: null,
      });
      assert.equal(
        (await call(t, token, 'POST', 'service/create-order', smallOrder('a.example.com'))).status,
        200,
      );
      const refused = await call(t, token, 'POST', 'service/create-order', smallOrder('b.example.com'));
      assert.equal(refused.body.error_code, 'quota_exceeded');

      const people = await vrp('reseller', 'quota', 'acme', '--ram', 'unlimited', '--cpu', '0');
      assert.equal(people.code, 0, people.err);
      assert.equal(
        people.out,
        'quota of reseller "acme" (resource, quota, use)\nservices\t1\t1\ncpu\t0\t1\nram\tunlimited\t1\n' +
          'hdd\tunlimited\t20\nip\tunlimited\t1\nbackup\tunlimited\t10\n',
      );
      const cleared = await vrp('reseller', 'quota', 'acme', '--clear', '--json');
      assert.deepEqual(cleared.json().quota, {
        services: null,
        cpu: null,
        ram: null,
        hdd: null,
        ip: null,
        backup: null,
      });
      assert.equal(
        (await call(t, token, 'POST', 'service/create-order', smallOrder('c.example.com'))).status,
        200,
      );
      assert.deepEqual((await call(t, token, 'GET', 'usage')).body.data.quota.services, null);
    });

    test('reseller quota: wrong arguments exit 2; an unknown reseller exits 1', async () => {
      const wrong: [string[], RegExp][] = [
        [['reseller', 'quota'], /a NAME is required/],
        [
          ['reseller', 'quota', 'acme', '--cpu=-1'],
          /--cpu is a whole number \(0 to 999999999\) or "unlimited", got "-1"/,
        ],
        [['reseller', 'quota', 'acme', '--ram', '1.5'], /--ram is a whole number/],
        [['reseller', 'quota', 'acme', '--hdd', '1000000000'], /--hdd is a whole number \(0 to 999999999\)/],
        [['reseller', 'quota', 'acme', '--clear', '--ip', '3'], /--clear takes no other caps/],
        [['reseller', 'quota', 'acme', '--disk', '3'], /Unknown option '--disk'/],
        [['reseller', 'quota', 'acme', 'extra'], /unexpected arguments: extra/],
      ];
      for (const [args, message] of wrong) {
        const r = await vrp(...args);
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
        assert.match(r.err, message);
      }
      const unknown = await vrp('reseller', 'quota', 'nobody', '--cpu', '1');
      assert.equal(unknown.code, 1);
      assert.match(unknown.err, /no reseller named "nobody"/);
      assert.deepEqual(
        (await vrp('reseller', 'quota', 'acme', '--json')).json().quota.cpu,
        null,
        'nothing changed',
      );
    });
  });
}
