/**
 * The usage report's presets and totals, the per-service usage CSV with the resellers' external
 * billing ids, and who may set those ids.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { microOf } from '../../../src/domain/usage-report.ts';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import { findResellerByName } from '../../../src/store/repos/resellers.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { createManualClock, type ManualClock } from '../../helpers/manual-clock.ts';
import { createTestOperator, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };
/** 22:00 on the last day of 2030: the services run into the new year, across a month's end. */
const T0 = Date.UTC(2030, 11, 31, 22);
const NEW_YEAR = Date.UTC(2031, 0, 1);

/** RFC 4180 as usage CSVs write it: quoted fields may hold commas and doubled quotes. */
function parseCsv(text: string): Record<string, string>[] {
  const rows: string[][] = [];
  for (const line of text.trimEnd().split('\r\n')) {
    const fields: string[] = [];
    let i = 0;
    while (i <= line.length) {
      if (line[i] === '"') {
        let value = '';
        i += 1;
        while (i < line.length) {
          if (line[i] === '"' && line[i + 1] === '"') {
            value += '"';
            i += 2;
          } else if (line[i] === '"') {
            i += 1;
            break;
          } else value += line[i++];
        }
        fields.push(value);
        i += 1;
      } else {
        const end = line.indexOf(',', i) === -1 ? line.length : line.indexOf(',', i);
        fields.push(line.slice(i, end));
        i = end + 1;
      }
    }
    rows.push(fields);
  }
  const [head, ...body] = rows;
  return body.map((r) => Object.fromEntries(head!.map((h, k) => [h, r[k] ?? ''])));
}

/** A decimal text of six decimals at most, in millionths. */
const microOfText = (text: string) => {
  const [whole = '0', fraction = ''] = text.split('.');
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0'));
};

for (const store of testStores()) {
  describe(`operator API: usage presets, totals, per-service CSV and billing ids (${store})`, () => {
    let t: TestApp;
    let clock: ManualClock;
    let admin: string;
    let billing: string;
    let support: string;
    const services: Record<string, string> = {};

    const csv = async (query: string) => {
      const res = await t.app.inject({
        method: 'GET',
        url: `/vps_reseller_provider/operator/v1/usage?${query}`,
        headers: { authorization: `Bearer ${admin}`, accept: 'text/csv' },
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.body;
    };

    before(async () => {
      clock = createManualClock(T0);
      t = await createTestApp({ VRP_TOKEN_TTL: String(30 * 86400) }, { store, worker: true, clock });
      admin = await operatorToken(t, await createTestOperator(t, { name: 'root-ops' }));
      billing = await operatorToken(t, await createTestOperator(t, { name: 'accounts', role: 'billing' }));
      support = await operatorToken(t, await createTestOperator(t, { name: 'helpdesk', role: 'support' }));
      const tokens = { acme: await t.token({ reseller: 'acme' }), beta: await t.token({ reseller: 'beta' }) };
      // Services started and suspended at odd milliseconds: their hours have remainders to round.
      const plan: [keyof typeof tokens, string, number][] = [
        ['acme', 'a1.example.com', 1_234_567],
        ['acme', 'a2.example.com', 777],
        ['acme', 'a3.example.com', 2_000_001],
        ['beta', 'b1.example.com', 333_333],
        ['beta', 'b2.example.com', 1],
      ];
      for (const [reseller, domain, wait] of plan) {
        const token = tokens[reseller];
        const res = await call(t, token, 'POST', 'service/create-order', smallOrder(domain), B);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        const id: string = res.body.data[0].service_id;
        services[domain] = id;
        await opsCall(t, admin, 'POST', `services/${id}/create`);
        await waitForStatus(t, token, id, 'running');
        clock.advance(wait);
      }
      await opsCall(t, admin, 'POST', `services/${services['a2.example.com']}/suspend`);
      await waitForStatus(t, tokens.acme, services['a2.example.com']!, 'suspended');
      // Traffic of odd byte counts on the last day of December.
      for (const [domain, bytesIn, bytesOut] of [
        ['a1.example.com', 1_500_501, 2_499],
        ['a2.example.com', 499, 1_000_500],
        ['b1.example.com', 123_456_789, 0],
      ] as const) {
        await t.ctx.store.db
          .insertInto('traffic_days')
          .values({
            service_id: services[domain]!,
            day: Date.UTC(2030, 11, 31),
            bytes_in: bytesIn,
            bytes_out: bytesOut,
          })
          .execute();
      }
      // To the first of January, 00:00 UTC, exactly.
      clock.advance(NEW_YEAR - clock.now());
    });
    after(() => t.close());

    test('presets on the 1st at 00:00 UTC: this month is January, last month December of the year before', async () => {
      const thisMonth = await opsCall(t, admin, 'GET', 'usage?period=this_month');
      assert.equal(thisMonth.status, 200, JSON.stringify(thisMonth.body));
      assert.deepEqual(
        [thisMonth.body.data.from, thisMonth.body.data.to, thisMonth.body.data.until],
        ['2031-01-01T00:00:00.000Z', '2031-02-01T00:00:00.000Z', '2031-01-01T00:00:00.000Z'],
      );
      const lastMonth = await opsCall(t, admin, 'GET', 'usage?period=last_month');
      assert.deepEqual(
        [lastMonth.body.data.from, lastMonth.body.data.to],
        ['2030-12-01T00:00:00.000Z', '2031-01-01T00:00:00.000Z'],
      );
      // The same report as the period spelt out.
      const spelt = await opsCall(t, admin, 'GET', 'usage?from=2030-12-01&to=2031-01-01');
      assert.deepEqual(lastMonth.body.data, spelt.body.data);
      assert.ok(lastMonth.body.data.lines.length >= 2);
    });

    test('period with from or to, or half a range, is 400 validation_failed; per=service as JSON too', async () => {
      for (const q of [
        'period=this_month&from=2031-01-01&to=2031-02-01',
        'period=last_month&from=2031-01-01',
        'period=last_month&to=2031-01-01',
        'period=next_month',
        'from=2031-01-01',
        'per=service&period=last_month',
        'per=everything&period=last_month',
      ]) {
        const res = await opsCall(t, admin, 'GET', `usage?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, 'validation_failed', q);
      }
      const both = await opsCall(t, admin, 'GET', 'usage?period=this_month&from=2031-01-01&to=2031-02-01');
      assert.match(both.body.message, /either period or from and to/);
    });

    test('totals: each figure is the sum of the lines, exactly', async () => {
      const { lines, totals } = (await opsCall(t, admin, 'GET', 'usage?period=last_month')).body.data;
      assert.ok(lines.length >= 2);
      for (const [field, total] of Object.entries(totals)) {
        const sum = lines.reduce((s: bigint, l: any) => s + microOf(l[field]), 0n);
        assert.equal(microOf(Number(total)), sum, field);
      }
      assert.equal(totals.services, 5);
      assert.ok(totals.suspended_service_hours > 0 && totals.traffic_in_gb > 0);
      // The CSV keeps one line per reseller and product: no totals line.
      const rows = parseCsv(await csv('period=last_month'));
      assert.equal(rows.length, lines.length);
    });

    test('per-service CSV: one line per service and resource, adding up to the report exactly', async () => {
      const report = (await opsCall(t, admin, 'GET', 'usage?period=last_month')).body.data;
      const rows = parseCsv(await csv('period=last_month&per=service'));
      assert.deepEqual(Object.keys(rows[0]!), [
        'from',
        'to',
        'reseller_id',
        'reseller_name',
        'reseller_external_billing_id',
        'service_id',
        'domain',
        'product_id',
        'product_name',
        'plan_name',
        'resource',
        'quantity',
        'unit',
      ]);
      const sums = new Map<string, bigint>();
      for (const r of rows) {
        assert.deepEqual([r.from, r.to], [report.from, report.to]);
        assert.equal(services[r.domain!], r.service_id);
        assert.equal(r.plan_name, 'Starter S');
        assert.notEqual(r.quantity, '0');
        const key = `${r.reseller_id} ${r.product_id} ${r.resource}`;
        sums.set(key, (sums.get(key) ?? 0n) + microOfText(r.quantity!));
      }
      let compared = 0;
      for (const line of report.lines) {
        for (const [field, value] of Object.entries(line)) {
          if (typeof value !== 'number' || field === 'services') continue;
          const key = `${line.reseller_id} ${line.product_id} ${field}`;
          assert.equal(sums.get(key) ?? 0n, microOf(value), key);
          sums.delete(key);
          compared += 1;
        }
      }
      assert.equal(sums.size, 0, `lines the report does not have: ${[...sums.keys()]}`);
      assert.ok(compared >= 26);
      const a2 = rows.filter((r) => r.domain === 'a2.example.com').map((r) => [r.resource, r.unit]);
      assert.deepEqual(a2.slice(0, 2), [
        ['service_hours', 'hours'],
        ['cpu_hours', 'vCore-hours'],
      ]);
      assert.ok(a2.some(([resource]) => resource === 'suspended_hdd_gb_hours'));
      assert.ok(a2.some(([resource, unit]) => resource === 'traffic_out_gb' && unit === 'GB'));
      // One reseller: only its lines.
      const beta = (await findResellerByName(t.ctx.store.db, 'beta'))!;
      const only = parseCsv(await csv(`period=last_month&per=service&reseller_id=${beta.id}`));
      assert.ok(only.length > 0 && only.every((r) => r.reseller_name === 'beta'));
    });

    test('the external billing id: set by billing, shown, carried on each line, cleared with null; audited', async () => {
      const beta = (await findResellerByName(t.ctx.store.db, 'beta'))!;
      const set = await opsCall(t, billing, 'PATCH', `resellers/${beta.id}`, {
        external_billing_id: '=CUST-42, "beta"',
      });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.equal(set.body.data.external_billing_id, '=CUST-42, "beta"');
      const details = await opsCall(t, admin, 'GET', `resellers/${beta.id}`);
      assert.equal(details.body.data.external_billing_id, '=CUST-42, "beta"');
      const list = await opsCall(t, admin, 'GET', 'resellers');
      const ids = Object.fromEntries(list.body.data.items.map((r: any) => [r.name, r.external_billing_id]));
      assert.deepEqual([ids.acme, ids.beta], [null, '=CUST-42, "beta"']);
      const text = await csv('period=last_month&per=service');
      // Quoted for its comma and quotes, and its leading = defused.
      assert.ok(text.includes(`,beta,"'=CUST-42, ""beta""",`), text);
      const rows = parseCsv(text);
      assert.ok(
        rows.filter((r) => r.reseller_name === 'acme').every((r) => r.reseller_external_billing_id === ''),
      );

      const cleared = await opsCall(t, admin, 'PATCH', `resellers/${beta.id}`, { external_billing_id: null });
      assert.equal(cleared.body.data.external_billing_id, null);
      const untouched = await opsCall(t, admin, 'PATCH', `resellers/${beta.id}`, {});
      assert.equal(untouched.status, 200);
      const entries = (await listAuditEntries(t.ctx.store.db, { limit: 50, action: 'reseller.update' })).map(
        (e) => [e.actor.name, e.target?.id, e.outcome],
      );
      assert.deepEqual(entries, [
        ['root-ops', beta.id, 'ok'],
        ['accounts', beta.id, 'ok'],
      ]);
    });

    test('bad billing ids are 400 validation_failed and change nothing; support is refused; unknown resellers 404', async () => {
      const acme = (await findResellerByName(t.ctx.store.db, 'acme'))!;
      await opsCall(t, admin, 'PATCH', `resellers/${acme.id}`, { external_billing_id: 'ACME-1' });
      for (const bad of [
        'x'.repeat(101),
        'line\nbreak',
        'tab\there',
        'bell\u0007',
        'rtl\u202Eoverride',
        '',
        ' padded',
        12,
        true,
      ]) {
        const res = await opsCall(t, admin, 'PATCH', `resellers/${acme.id}`, { external_billing_id: bad });
        assert.equal(res.status, 400, JSON.stringify(bad));
        assert.equal(res.body.error_code, 'validation_failed', JSON.stringify(bad));
        assert.match(res.body.message, /external_billing_id/);
      }
      const unknownKey = await opsCall(t, admin, 'PATCH', `resellers/${acme.id}`, { billing_id: 'x' });
      assert.equal(unknownKey.body.error_code, 'validation_failed');
      const refused = await opsCall(t, support, 'PATCH', `resellers/${acme.id}`, {
        external_billing_id: 'NOPE',
      });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error_code, 'insufficient_role');
      assert.match(refused.body.message, /admin or billing/);
      assert.equal((await findResellerByName(t.ctx.store.db, 'acme'))!.externalBillingId, 'ACME-1');
      for (const id of ['00000000-0000-4000-8000-000000000000', 'nope']) {
        const res = await opsCall(t, admin, 'PATCH', `resellers/${id}`, { external_billing_id: 'X' });
        assert.equal(res.status, 404);
        assert.equal(res.body.error_code, 'reseller_not_found');
      }
    });
  });

  describe(`operator API: usage presets at the end of a year (${store})`, () => {
    let t: TestApp;
    let admin: string;
    const clock = createManualClock(Date.UTC(2030, 11, 31, 23, 59, 59, 999));

    before(async () => {
      t = await createTestApp({}, { store, clock });
      admin = await operatorToken(t);
    });
    after(() => t.close());

    test('the last millisecond of December: this month is December, last month November; then January', async () => {
      const period = async (p: string) => {
        const data = (await opsCall(t, admin, 'GET', `usage?period=${p}`)).body.data;
        return [data.from, data.to];
      };
      assert.deepEqual(await period('this_month'), ['2030-12-01T00:00:00.000Z', '2031-01-01T00:00:00.000Z']);
      assert.deepEqual(await period('last_month'), ['2030-11-01T00:00:00.000Z', '2030-12-01T00:00:00.000Z']);
      clock.advance(1);
      assert.deepEqual(await period('this_month'), ['2031-01-01T00:00:00.000Z', '2031-02-01T00:00:00.000Z']);
      assert.deepEqual(await period('last_month'), ['2030-12-01T00:00:00.000Z', '2031-01-01T00:00:00.000Z']);
    });
  });
}
