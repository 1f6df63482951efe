/**
 * Statements compiled once (src/store/prepared.ts): each run puts its own values in the slots'
 * places and keeps the statement's constants, in a database or a transaction, on both stores;
 * the statement is built once per dialect; a slot the SQL does not use is refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { prepare, slot } from '../../src/store/prepared.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const reseller = (id: string, enabled: number) => ({
  id,
  name: `name of ${id}`,
  enabled,
  created_at: 1_700_000_000_000,
});

let builds = 0;
/** A reseller by id, among the enabled ones only (a constant of the statement). */
const enabledReseller = prepare({ id: slot<string>() }, (db, s) => {
  builds++;
  return db.selectFrom('resellers').select(['id', 'name']).where('id', '=', s.id).where('enabled', '=', 1);
});
const rename = prepare({ id: slot<string>(), name: slot<string>() }, (db, s) =>
  db.updateTable('resellers').set({ name: s.name }).where('id', '=', s.id),
);

for (const store of testStores()) {
  describe(`prepared statements (${store})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({}, { demo: false, store });
      await t.ctx.store.db
        .insertInto('resellers')
        .values([reseller('r-on-1', 1), reseller('r-on-2', 1), reseller('r-off', 0)])
        .execute();
    });
    after(() => t.close());

    test('each run reads with its own values, and the constants stay', async () => {
      const before = builds;
      assert.deepEqual(
        { ...(await enabledReseller.first(t.ctx.store.db, { id: 'r-on-1' })) },
        {
          id: 'r-on-1',
          name: 'name of r-on-1',
        },
      );
      assert.deepEqual(
        { ...(await enabledReseller.first(t.ctx.store.db, { id: 'r-on-2' })) },
        {
          id: 'r-on-2',
          name: 'name of r-on-2',
        },
      );
      // `enabled = 1` is part of the statement, not a value of the first run.
      assert.equal(await enabledReseller.first(t.ctx.store.db, { id: 'r-off' }), undefined);
      assert.equal(await enabledReseller.first(t.ctx.store.db, { id: 'nobody' }), undefined);
      assert.ok(builds - before <= 1, `built ${builds - before} times for four runs`);
    });

    test('writes in a transaction, which rolls back with it; the count of rows changed is told', async () => {
      await assert.rejects(
        t.ctx.store.db.transaction().execute(async (tx) => {
          const r = await rename.execute(tx, { id: 'r-on-1', name: 'renamed' });
          assert.equal(r.numAffectedRows, 1n);
          assert.deepEqual(
            { ...(await enabledReseller.first(tx, { id: 'r-on-1' })) },
            { id: 'r-on-1', name: 'renamed' },
          );
          throw new Error('undo');
        }),
        /undo/,
      );
      assert.equal((await enabledReseller.first(t.ctx.store.db, { id: 'r-on-1' }))?.name, 'name of r-on-1');
      const none = await rename.execute(t.ctx.store.db, { id: 'nobody', name: 'x' });
      assert.equal(none.numAffectedRows, 0n);
      await rename.execute(t.ctx.store.db, { id: 'r-on-2', name: 'second' });
      assert.equal((await enabledReseller.first(t.ctx.store.db, { id: 'r-on-2' }))?.name, 'second');
      assert.equal((await enabledReseller.first(t.ctx.store.db, { id: 'r-on-1' }))?.name, 'name of r-on-1');
    });

    test('a slot that the statement does not use is refused, by name', async () => {
      const wrong = prepare({ id: slot<string>(), unused: slot<number>() }, (db, s) =>
        db.selectFrom('resellers').select('id').where('id', '=', s.id),
      );
      await assert.rejects(
        wrong.execute(t.ctx.store.db, { id: 'r-on-1', unused: 1 }),
        /slot\(s\) unused not in its SQL/,
      );
    });
  });
}
