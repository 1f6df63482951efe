/**
 * The `vrp` reseller commands and the operator API are two doors to the same changes: both
 * write through the same store functions and both are audited (the CLI as actor `cli`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listAuditEntries } from '../../src/store/repos/audit.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { vrpOn } from '../helpers/cli.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`vrp reseller commands beside the operator API (${store})`, () => {
    let t: TestApp;
    let ops: string;
    const vrp = (...args: string[]) => vrpOn(t, ...args);

    before(async () => {
      t = await createTestApp({}, { store, demo: false });
      ops = await operatorToken(t);
    });
    after(() => t.close());

    const entries = async (resellerId: string) =>
      (await listAuditEntries(t.ctx.store.db, { resellerId, limit: 100, order: 'oldest' })).map((e) => [
        e.actor.type,
        e.action,
        e.outcome,
      ]);

    test('vrp reseller quota is audited as the CLI; the operator API sees the quota and sets it back', async () => {
      const created = await vrp('reseller', 'create', 'clicorp', '--json');
      assert.equal(created.code, 0, created.err);
      const id = created.json().id;
      const set = await vrp('reseller', 'quota', 'clicorp', '--services', '3', '--json');
      assert.equal(set.code, 0, set.err);
      const seen = await opsCall(t, ops, 'GET', `resellers/${id}`);
      assert.equal(seen.body.data.quota.services, 3);
      await opsCall(t, ops, 'PUT', `resellers/${id}/quota`, { services: 5 });
      const shown = await vrp('reseller', 'quota', 'clicorp', '--json');
      assert.equal(shown.json().quota.services, 5);
      // A refused command (a bad cap) changes and records nothing.
      assert.equal((await vrp('reseller', 'quota', 'clicorp', '--cpu', 'lots')).code, 2);
      assert.deepEqual(await entries(id), [
        ['cli', 'reseller.create', 'ok'],
        ['cli', 'reseller.quota', 'ok'],
        ['operator', 'reseller.quota', 'ok'],
      ]);
    });

    test('a reseller made by either door is refused by the other as a duplicate; disable works from both', async () => {
      const made = await opsCall(t, ops, 'POST', 'resellers', { name: 'apicorp' });
      const id = made.body.data.reseller_id;
      const dup = await vrp('reseller', 'create', 'apicorp');
      assert.equal(dup.code, 1);
      assert.match(dup.err, /exists already/);
      assert.equal((await vrp('reseller', 'create', 'clidup')).code, 0);
      const refused = await opsCall(t, ops, 'POST', 'resellers', { name: 'clidup' });
      assert.equal(refused.body.error_code, 'reseller_name_taken');

      assert.equal((await vrp('reseller', 'disable', 'apicorp')).code, 0);
      assert.equal((await opsCall(t, ops, 'GET', `resellers/${id}`)).body.data.enabled, false);
      await opsCall(t, ops, 'POST', `resellers/${id}/enable`);
      const list = await vrp('reseller', 'list', '--json');
      assert.equal(list.json().find((r: any) => r.name === 'apicorp').enabled, true);
      assert.equal((await vrp('reseller', 'disable', 'nobody')).code, 1);
      assert.deepEqual(await entries(id), [
        ['operator', 'reseller.create', 'ok'],
        ['cli', 'reseller.disable', 'ok'],
        ['operator', 'reseller.enable', 'ok'],
      ]);
    });
  });
}
