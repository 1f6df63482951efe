import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findOperatorByName } from '../../../src/store/repos/operators.ts';
import { findResellerByName } from '../../../src/store/repos/resellers.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { createManualClock, type ManualClock } from '../../helpers/manual-clock.ts';
import { createTestOperator, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const HOUR = 3_600_000;
const T0 = Date.UTC(2031, 0, 1);
const B = { 'x-envelope-variant': 'B' };
const MISSING = '00000000-0000-4000-8000-000000000000';

for (const store of testStores()) {
  describe(`operator API: usage and audit (${store})`, () => {
    let t: TestApp;
    let clock: ManualClock;
    let ops: string;
    let operatorId: string;
    let acme: string;
    let acmeId: string;
    let service: string;

    before(async () => {
      clock = createManualClock(T0);
      t = await createTestApp({ VRP_TOKEN_TTL: String(30 * 86400) }, { store, worker: true, clock });
      const operator = await createTestOperator(t);
      operatorId = (await findOperatorByName(t.ctx.store.db, operator.operator))!.id;
      ops = await operatorToken(t, operator);
      acme = await t.token({ reseller: 'acme' });
      acmeId = (await findResellerByName(t.ctx.store.db, 'acme'))!.id;
      await t.token({ reseller: 'quiet' });
      const order = await call(t, acme, 'POST', 'service/create-order', smallOrder('billed.example.com'), B);
      service = order.body.data[0].service_id;
      await opsCall(t, ops, 'POST', `services/${service}/create`);
      await waitForStatus(t, acme, service, 'running');
      clock.advance(2 * HOUR);
      await opsCall(t, ops, 'POST', `services/${service}/suspend`);
      await waitForStatus(t, acme, service, 'suspended');
      clock.advance(HOUR);
    });
    after(() => t.close());

    const period = `from=${new Date(T0 - HOUR).toISOString()}&to=${new Date(T0 + 10 * HOUR).toISOString()}`;

    test('usage as JSON: service- and resource-hours per reseller and product, suspended time apart', async () => {
      const res = await opsCall(t, ops, 'GET', `usage?${period}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const line = res.body.data.lines.find((l: any) => l.reseller_id === acmeId);
      assert.equal(line.services, 1);
      assert.equal(line.service_hours, 2);
      assert.equal(line.cpu_hours, 2);
      assert.equal(line.hdd_gb_hours, 40);
      assert.equal(line.suspended_service_hours, 1);
      assert.equal(res.body.data.until, new Date(T0 + 3 * HOUR).toISOString());
      const one = await opsCall(t, ops, 'GET', `usage?${period}&reseller_id=${acmeId}`);
      assert.deepEqual(one.body.data.lines, [line]);
    });

    test('usage as CSV with Accept: text/csv', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: `/vps_reseller_provider/operator/v1/usage?${period}`,
        headers: { authorization: `Bearer ${ops}`, accept: 'text/csv' },
      });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^text\/csv/);
      const rows = res.body.trimEnd().split('\r\n');
      assert.match(
        rows[0]!,
        /^from,to,reseller_id,reseller_name,product_id,product_name,services,service_hours/,
      );
      const acmeRow = rows.find((r) => r.includes(acmeId))!;
      assert.ok(acmeRow.includes(',acme,'));
      assert.equal(acmeRow.split(',')[7], '2');
    });

    test('usage refuses bad periods and unknown resellers; resellers get 403', async () => {
      for (const q of [
        'from=yesterday&to=2031-01-02',
        'from=2031-01-02&to=2031-01-01',
        'to=2031-01-02',
        '',
      ]) {
        const res = await opsCall(t, ops, 'GET', `usage?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, 'validation_failed');
      }
      for (const id of [MISSING, 'nope']) {
        const res = await opsCall(t, ops, 'GET', `usage?${period}&reseller_id=${id}`);
        assert.equal(res.status, 404);
        assert.equal(res.body.error_code, 'reseller_not_found');
      }
      assert.equal((await opsCall(t, acme, 'GET', `usage?${period}`)).status, 403);
    });

    test('the audit log: newest first, by actor and service, after an entry oldest first, paged', async () => {
      const all = await opsCall(t, ops, 'GET', 'audit?limit=1000');
      assert.equal(all.status, 200);
      const items = all.body.data.items;
      assert.deepEqual(
        items.map((e: any) => e.entry_id),
        [...items.map((e: any) => e.entry_id)].sort().reverse(),
      );
      const mine = (await opsCall(t, ops, 'GET', `audit?actor=operator:${operatorId}`)).body.data.items;
      assert.deepEqual(
        mine.map((e: any) => [e.action, e.target.id, e.service_id, e.reseller_id, e.outcome]),
        [
          ['service.suspend', service, service, acmeId, 'ok'],
          ['service.create', service, service, acmeId, 'ok'],
        ],
      );
      assert.ok(mine.every((e: any) => e.actor.type === 'operator' && typeof e.request_id === 'string'));
      const byService = (await opsCall(t, ops, 'GET', `audit?service_id=${service}`)).body.data.items;
      assert.deepEqual(
        byService.map((e: any) => [e.actor.type, e.action]),
        [
          ['operator', 'service.suspend'],
          ['operator', 'service.create'],
          ['application', 'service.order'],
        ],
      );
      const applications = (await opsCall(t, ops, 'GET', 'audit?actor=application')).body.data.items;
      assert.ok(applications.length > 0 && applications.every((e: any) => e.actor.type === 'application'));
      // After the order: what came next, oldest first.
      const orderEntry = byService[2].entry_id;
      const next = (await opsCall(t, ops, 'GET', `audit?after=${orderEntry}&service_id=${service}`)).body
        .data;
      assert.deepEqual(
        next.items.map((e: any) => e.action),
        ['service.create', 'service.suspend'],
      );
      // Pages of one: the same entries, none twice, in either order.
      for (const start of ['audit?limit=1', `audit?limit=1&after=${orderEntry}`]) {
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const res: any = await opsCall(
            t,
            ops,
            'GET',
            `${start}&service_id=${service}${cursor ? `&cursor=${cursor}` : ''}`,
          );
          seen.push(...res.body.data.items.map((e: any) => e.entry_id));
          cursor = res.body.data.next_cursor;
        } while (cursor);
        assert.equal(new Set(seen).size, seen.length);
        assert.equal(seen.length, start.includes('after') ? 2 : 3);
      }
    });

    test('the audit log refuses bad filters and reseller tokens', async () => {
      for (const q of ['actor=robot', 'actor=', 'after=nope', 'limit=5000', 'cursor=zzz']) {
        const res = await opsCall(t, ops, 'GET', `audit?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, q.startsWith('cursor=') ? 'invalid_cursor' : 'validation_failed');
      }
      assert.deepEqual((await opsCall(t, ops, 'GET', 'audit?service_id=nope')).body.data.items, []);
      const res = await opsCall(t, acme, 'GET', 'audit');
      assert.equal(res.status, 403);
      assert.equal(res.body.error_code, 'insufficient_scope');
    });
  });
}
