/**
 * Reads and updates made together (src/store/statement-batch.ts), on both stores: each caller
 * gets its own rows or its own count, two updates of one row are both made, and one that fails
 * fails alone. On PostgreSQL the statements of one turn went as one.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/store/schema.ts';
import { readTogether, updateTogether } from '../../src/store/statement-batch.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { statementCounter } from '../helpers/statement-counter.ts';
import { testStores } from '../helpers/stores.ts';

const NOW = 1_700_000_000_000;

for (const store of testStores()) {
  describe(`reads and updates made together (${store})`, () => {
    let t: TestApp;
    /** The store's database, counting the statements it runs. */
    let db: Kysely<Database>;
    const counter = statementCounter();
    before(async () => {
      t = await createTestApp({}, { demo: false, store });
      db = t.ctx.store.db.withPlugin(counter);
    });
    after(() => t.close());
    beforeEach(async () => {
      await t.ctx.store.db.deleteFrom('resellers').execute();
      await t.ctx.store.db
        .insertInto('resellers')
        .values(['a', 'b', 'c'].map((id) => ({ id, name: `name ${id}`, enabled: 1, created_at: NOW })))
        .execute();
      counter.reset();
    });

    const byId = (id: string) =>
      db.selectFrom('resellers').select(['id', 'name']).where('id', '=', id).compile();
    const bump = (id: string) =>
      db
        .updateTable('resellers')
        .set((eb) => ({ enabled: eb('enabled', '+', 1) }))
        .where('id', '=', id)
        .compile();
    const enabled = async () =>
      (await t.ctx.store.db.selectFrom('resellers').select(['id', 'enabled']).orderBy('id').execute()).map(
        (r) => `${r.id}:${r.enabled}`,
      );

    test('reads: each caller gets its own rows, none when it finds none', async () => {
      const everyone = db.selectFrom('resellers').select(['id', 'name']).orderBy('id').compile();
      const rows = await Promise.all([
        readTogether(db, byId('c'), 'c'),
        readTogether(db, byId('nobody'), 'nobody'),
        readTogether(db, byId('a'), 'a'),
        readTogether(db, byId('b'), 'b'),
        readTogether(db, everyone, 'all'),
      ]);
      assert.deepEqual(
        rows.map((r) => r.map((x) => `${x.id}=${x.name}`)),
        [['c=name c'], [], ['a=name a'], ['b=name b'], ['a=name a', 'b=name b', 'c=name c']],
      );
      // One statement for the four of one shape, one for the other.
      assert.equal(counter.count, store === 'postgres' ? 2 : 5);
    });

    test('reads: one that fails fails alone; the others answer', async () => {
      // One shape, string values: on PostgreSQL one statement with arrays, which fails on 'x'
      // (not an integer); each read is made again alone. SQLite casts 'x' to 0: no row.
      const enabledAs = (value: string) =>
        db
          .selectFrom('resellers')
          .select('id')
          .where('enabled', '=', sql<number>`cast(${value} as integer)`)
          .orderBy('id')
          .compile();
      const results = await Promise.allSettled([
        readTogether(db, enabledAs('1'), '1'),
        readTogether(db, enabledAs('x'), 'x'),
        readTogether(db, enabledAs('0'), '0'),
      ]);
      assert.deepEqual(
        results.map((r) => (r.status === 'fulfilled' ? r.value.map((x) => x.id).join() : 'rejected')),
        ['a,b,c', store === 'postgres' ? 'rejected' : '', ''],
      );
    });

    test('updates: each caller gets its own count; two of one row are both made', async () => {
      const counts = await Promise.all([
        updateTogether(db, bump('a'), 'resellers#a'),
        updateTogether(db, bump('nobody'), 'resellers#nobody'),
        updateTogether(db, bump('c'), 'resellers#c'),
        updateTogether(db, bump('b'), 'resellers#b'),
        updateTogether(db, bump('a'), 'resellers#a'),
      ]);
      assert.deepEqual(counts, [1, 0, 1, 1, 1]);
      assert.deepEqual(await enabled(), ['a:3', 'b:2', 'c:2']);
      // a's second update went apart from the first: one statement for four, one for it.
      assert.equal(counter.count, store === 'postgres' ? 2 : 5);
    });

    test('one that fails fails alone; the others are made', async () => {
      const rename = (id: string, name: string | null) =>
        db
          .updateTable('resellers')
          .set({ name: name as string })
          .where('id', '=', id)
          .compile();
      // One shape: the three in one statement, which fails on b's; each made again alone.
      const results = await Promise.allSettled([
        updateTogether(db, rename('a', 'renamed a'), 'resellers#a'),
        updateTogether(db, rename('b', null), 'resellers#b'),
        updateTogether(db, rename('c', 'renamed c'), 'resellers#c'),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      const names = await t.ctx.store.db.selectFrom('resellers').select('name').orderBy('id').execute();
      assert.deepEqual(
        names.map((r) => r.name),
        ['renamed a', 'name b', 'renamed c'],
      );
    });
  });
}
