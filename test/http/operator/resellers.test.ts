import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import { findOperatorByName } from '../../../src/store/repos/operators.ts';
import { API, call, createTestApp, type TestApp } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { createTestOperator, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const MISSING = '00000000-0000-4000-8000-000000000000';

for (const store of testStores()) {
  describe(`operator API: resellers (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let operatorId: string;

    before(async () => {
      t = await createTestApp({}, { store });
      const operator = await createTestOperator(t);
      operatorId = (await findOperatorByName(t.ctx.store.db, operator.operator))!.id;
      ops = await operatorToken(t, operator);
    });
    after(() => t.close());

    const audit = (resellerId: string) =>
      listAuditEntries(t.ctx.store.db, { resellerId, limit: 100, order: 'oldest' });

    test('create, then get it with its applications, quota and use; the change is in the audit log', async () => {
      const created = await opsCall(t, ops, 'POST', 'resellers', { name: 'Blue Hosting' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const r = created.body.data;
      assert.equal(r.name, 'Blue Hosting');
      assert.equal(r.enabled, true);
      await t.client({ reseller: 'Blue Hosting', scopes: ['service'] });

      const got = await opsCall(t, ops, 'GET', `resellers/${r.reseller_id}`);
      assert.equal(got.status, 200);
      assert.equal(got.body.data.applications.length, 1);
      assert.deepEqual(got.body.data.applications[0].scopes, ['service']);
      assert.equal(got.body.data.applications[0].client_secret, undefined);
      assert.deepEqual(got.body.data.quota, {
        services: null,
        cpu: null,
        ram: null,
        hdd: null,
        ip: null,
        backup: null,
      });
      assert.equal(got.body.data.use.services, 0);

      const entries = await audit(r.reseller_id);
      assert.deepEqual(
        entries.map((e) => [e.actor.type, e.actor.id, e.action, e.target?.id, e.outcome]),
        [['operator', operatorId, 'reseller.create', r.reseller_id, 'ok']],
      );
    });

    test('a name in use is 409 reseller_name_taken; a bad name or body is 400; nothing is written', async () => {
      await opsCall(t, ops, 'POST', 'resellers', { name: 'twice' });
      const again = await opsCall(t, ops, 'POST', 'resellers', { name: 'twice' });
      assert.equal(again.status, 409);
      assert.equal(again.body.error_code, 'reseller_name_taken');
      for (const body of [
        {},
        { name: '' },
        { name: ' leading space' },
        { name: 'x'.repeat(101) },
        { name: 5 },
      ]) {
        const res = await opsCall(t, ops, 'POST', 'resellers', body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error_code, 'validation_failed');
      }
      const list = await opsCall(t, ops, 'GET', 'resellers?limit=1000');
      assert.equal(list.body.data.items.filter((r: any) => r.name === 'twice').length, 1);
    });

    test('unknown or malformed ids are 404 reseller_not_found', async () => {
      for (const path of [`resellers/${MISSING}`, 'resellers/not-an-id']) {
        const res = await opsCall(t, ops, 'GET', path);
        assert.equal(res.status, 404);
        assert.equal(res.body.error_code, 'reseller_not_found');
      }
      for (const verb of ['disable', 'enable']) {
        const res = await opsCall(t, ops, 'POST', `resellers/${MISSING}/${verb}`);
        assert.equal(res.status, 404);
        assert.equal(res.body.error_code, 'reseller_not_found');
      }
      const quota = await opsCall(t, ops, 'PUT', `resellers/${MISSING}/quota`, { services: 1 });
      assert.equal(quota.status, 404);
    });

    test('disabling a reseller refuses its tokens; enabling lets it in again; both audited', async () => {
      const r = (await opsCall(t, ops, 'POST', 'resellers', { name: 'switchy' })).body.data;
      const app = await t.client({ reseller: 'switchy' });
      const token = await t.token({ client: app });
      assert.equal((await call(t, token, 'GET', 'version')).status, 200);

      const off = await opsCall(t, ops, 'POST', `resellers/${r.reseller_id}/disable`);
      assert.equal(off.status, 200);
      assert.equal(off.body.data.enabled, false);
      const refused = await call(t, token, 'GET', 'version');
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error_code, 'invalid_token');
      await assert.rejects(t.token({ client: app }), /401/);

      const on = await opsCall(t, ops, 'POST', `resellers/${r.reseller_id}/enable`);
      assert.equal(on.body.data.enabled, true);
      assert.equal((await call(t, await t.token({ client: app }), 'GET', 'version')).status, 200);
      assert.deepEqual(
        (await audit(r.reseller_id)).map((e) => e.action),
        ['reseller.create', 'reseller.disable', 'reseller.enable'],
      );
    });

    test("disable, then enable: its applications' tokens issued before the disable stay refused", async () => {
      const r = (await opsCall(t, ops, 'POST', 'resellers', { name: 'switched-back' })).body.data;
      const apps = [
        await t.client({ reseller: 'switched-back' }),
        await t.client({ reseller: 'switched-back' }),
      ];
      const before = await Promise.all(apps.map((client) => t.token({ client })));
      const status = async (token: string) => (await call(t, token, 'GET', 'version')).status;
      for (const token of before) assert.equal(await status(token), 200);
      assert.equal((await opsCall(t, ops, 'POST', `resellers/${r.reseller_id}/disable`)).status, 200);
      for (const token of before) assert.equal(await status(token), 401);
      assert.equal((await opsCall(t, ops, 'POST', `resellers/${r.reseller_id}/enable`)).status, 200);
      for (const token of before) assert.equal(await status(token), 401, 'enabling does not bring it back');
      for (const client of apps) assert.equal(await status(await t.token({ client })), 200);
    });

    test('PUT quota sets the caps as a whole, the reseller sees them, orders beyond are refused', async () => {
      const r = (await opsCall(t, ops, 'POST', 'resellers', { name: 'capped' })).body.data;
      const token = await t.token({ reseller: 'capped' });
      const set = await opsCall(t, ops, 'PUT', `resellers/${r.reseller_id}/quota`, {
        services: 1,
        cpu: null,
      });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(set.body.data.quota, {
        services: 1,
        cpu: null,
        ram: null,
        hdd: null,
        ip: null,
        backup: null,
      });
      const seen = await call(t, token, 'GET', 'usage');
      assert.equal(seen.body.data.quota.services, 1);
      assert.equal(
        (await call(t, token, 'POST', 'service/create-order', smallOrder('a.example.com'))).status,
        200,
      );
      const over = await call(t, token, 'POST', 'service/create-order', smallOrder('b.example.com'));
      assert.equal(over.status, 400);
      assert.equal(over.body.error_code, 'quota_exceeded');

      const lifted = await opsCall(t, ops, 'PUT', `resellers/${r.reseller_id}/quota`, {});
      assert.equal(lifted.body.data.quota.services, null);
      assert.equal(lifted.body.data.use.services, 1);
      const quotaEntries = (await audit(r.reseller_id)).filter((e) => e.action === 'reseller.quota');
      assert.deepEqual(
        quotaEntries.map((e) => [e.actor.type, e.outcome]),
        [
          ['operator', 'ok'],
          ['operator', 'ok'],
        ],
      );
    });

    test('PUT quota refuses caps that are not whole numbers from 0 to 999999999, writing nothing', async () => {
      const r = (await opsCall(t, ops, 'POST', 'resellers', { name: 'strict' })).body.data;
      for (const body of [
        { cpu: -1 },
        { ram: 1.5 },
        { hdd: '10' },
        { ip: 1_000_000_000 },
        { backup: true },
      ]) {
        const res = await opsCall(t, ops, 'PUT', `resellers/${r.reseller_id}/quota`, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error_code, 'validation_failed');
      }
      const got = await opsCall(t, ops, 'GET', `resellers/${r.reseller_id}`);
      assert.deepEqual(got.body.data.quota, {
        services: null,
        cpu: null,
        ram: null,
        hdd: null,
        ip: null,
        backup: null,
      });
      const outcomes = (await audit(r.reseller_id))
        .filter((e) => e.action === 'reseller.quota')
        .map((e) => e.outcome);
      assert.deepEqual(outcomes, Array(5).fill('validation_failed'));
    });

    test('the list pages in name order with an opaque cursor; bad limits and cursors are 400', async () => {
      for (const n of ['p-1', 'p-2', 'p-3', 'p-4', 'p-5'])
        await opsCall(t, ops, 'POST', 'resellers', { name: n });
      const names: string[] = [];
      let cursor: string | null = null;
      do {
        const res: any = await opsCall(
          t,
          ops,
          'GET',
          `resellers?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        );
        assert.equal(res.status, 200);
        assert.ok(res.body.data.items.length <= 2);
        names.push(...res.body.data.items.map((r: any) => r.name));
        cursor = res.body.data.next_cursor;
      } while (cursor);
      assert.deepEqual(names, [...names].sort());
      assert.equal(new Set(names).size, names.length);
      for (const n of ['p-1', 'p-2', 'p-3', 'p-4', 'p-5']) assert.ok(names.includes(n));
      for (const q of [
        'limit=0',
        'limit=1001',
        'limit=x',
        'cursor=nope',
        `cursor=${Buffer.from('["services","x"]').toString('base64url')}`,
      ]) {
        const res = await opsCall(t, ops, 'GET', `resellers?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, q.startsWith('cursor=') ? 'invalid_cursor' : 'validation_failed');
      }
    });

    test('a reseller token reaches none of it (403), with or without the service scope', async () => {
      const token = await t.token({ reseller: 'nosy' });
      for (const [method, path, body] of [
        ['GET', 'resellers'],
        ['POST', 'resellers', { name: 'evil' }],
        ['GET', `resellers/${MISSING}`],
        ['PUT', `resellers/${MISSING}/quota`, {}],
        ['POST', `resellers/${MISSING}/disable`],
      ] as const) {
        const res = await opsCall(t, token, method, path, body);
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.equal(res.body.error_code, 'insufficient_scope');
      }
      // And an operator token does not reach the reseller API.
      const res = await call(t, ops, 'GET', `${API}/usage`);
      assert.equal(res.status, 403);
    });
  });
}
