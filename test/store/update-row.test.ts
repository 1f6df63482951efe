/**
 * Updates by key with SQL built once per shape (src/store/update-row.ts), on both stores: each
 * run writes its own values to the rows it matches and no others, in a database or a
 * transaction; the returned columns and the count are those of the rows changed; a column given
 * as undefined is left as it is, also when the same columns were given values before.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { updateWhere } from '../../src/store/update-row.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const reseller = (id: string) => ({ id, name: `name of ${id}`, enabled: 1, created_at: 1_700_000_000_000 });

for (const store of testStores()) {
  describe(`updates built once per shape (${store})`, () => {
    let t: TestApp;
    const names = async () =>
      (
        await t.ctx.store.db.selectFrom('resellers').select(['id', 'name', 'enabled']).orderBy('id').execute()
      ).map((r) => `${r.id} ${r.name} ${r.enabled}`);
    before(async () => {
      t = await createTestApp({}, { demo: false, store });
      await t.ctx.store.db
        .insertInto('resellers')
        .values([reseller('r-1'), reseller('r-2'), reseller('r-3')])
        .execute();
    });
    after(() => t.close());

    test('each run of a shape writes its own values to the rows it matches, and says what it changed', async () => {
      const db = t.ctx.store.db;
      const plain = (r: { updated: number; rows: object[] }) => ({
        ...r,
        rows: r.rows.map((x) => ({ ...x })),
      });
      const first = await updateWhere(db, 'resellers', { name: 'one' }, { id: 'r-1' }, ['id', 'name']);
      assert.deepEqual(plain(first), { updated: 1, rows: [{ id: 'r-1', name: 'one' }] });
      const second = await updateWhere(db, 'resellers', { name: 'two' }, { id: 'r-2' }, ['id', 'name']);
      assert.deepEqual(plain(second), { updated: 1, rows: [{ id: 'r-2', name: 'two' }] });
      assert.deepEqual(await names(), ['r-1 one 1', 'r-2 two 1', 'r-3 name of r-3 1']);

      // Two columns matched: both must hold; nothing matched changes nothing.
      const none = await updateWhere(db, 'resellers', { name: 'x' }, { id: 'r-3', enabled: 0 });
      assert.deepEqual(none, { updated: 0, rows: [] });
      const both = await updateWhere(db, 'resellers', { name: 'three' }, { id: 'r-3', enabled: 1 });
      assert.equal(both.updated, 1);
      assert.deepEqual(await names(), ['r-1 one 1', 'r-2 two 1', 'r-3 three 1']);
    });

    test('in a transaction, and rolled back with it', async () => {
      const db = t.ctx.store.db;
      await db.transaction().execute((tx) => updateWhere(tx, 'resellers', { name: 'in tx' }, { id: 'r-1' }));
      await assert.rejects(
        db.transaction().execute(async (tx) => {
          await updateWhere(tx, 'resellers', { name: 'undone' }, { id: 'r-2' });
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      const rows = await names();
      assert.equal(rows[0], 'r-1 in tx 1');
      assert.equal(rows[1], 'r-2 two 1');
    });

    test('a column given as undefined is left as it is, whatever the shape run before', async () => {
      const db = t.ctx.store.db;
      await updateWhere(db, 'resellers', { name: 'off', enabled: 0 }, { id: 'r-3' });
      assert.equal((await names())[2], 'r-3 off 0');
      await updateWhere(db, 'resellers', { name: 'on again', enabled: undefined }, { id: 'r-3' });
      assert.equal((await names())[2], 'r-3 on again 0');
      await updateWhere(db, 'resellers', { name: 'on', enabled: 1 }, { id: 'r-3' });
      assert.equal((await names())[2], 'r-3 on 1');
    });

    test('refuses an update with nothing to set, nothing to match, or a match on no value', async () => {
      const db = t.ctx.store.db;
      await assert.rejects(updateWhere(db, 'resellers', {}, { id: 'r-1' }), /needs columns/);
      await assert.rejects(updateWhere(db, 'resellers', { name: undefined }, { id: 'r-1' }), /needs columns/);
      await assert.rejects(updateWhere(db, 'resellers', { name: 'x' }, {}), /needs columns/);
      await assert.rejects(
        updateWhere(db, 'resellers', { name: 'x' }, { external_billing_id: null }),
        /matches external_billing_id with no value/,
      );
      assert.deepEqual(await names(), ['r-1 in tx 1', 'r-2 two 1', 'r-3 on 1']);
    });
  });
}
