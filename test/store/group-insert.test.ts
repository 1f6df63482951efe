import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { createGroupInserter } from '../../src/store/group-insert.ts';
import { insertRow, insertRows } from '../../src/store/insert-row.ts';
import type { Database } from '../../src/store/schema.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const reseller = (id: string) => ({ id, name: `name of ${id}`, enabled: 1, created_at: 1_700_000_000_000 });

for (const store of testStores()) {
  describe(`group-committed inserts (${store})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({}, { demo: false, store });
    });
    after(() => t.close());

    const names = async (prefix: string) =>
      (
        await t.ctx.store.db
          .selectFrom('resellers')
          .select(['id', 'name'])
          .where('id', 'like', `${prefix}%`)
          .execute()
      )
        .map((r) => `${r.id}=${r.name}`)
        .sort();

    test('rows inserted at once are all stored, each caller told when its row is', async () => {
      const inserter = createGroupInserter(t.ctx.store.db, 'resellers');
      await Promise.all(Array.from({ length: 150 }, (_, i) => inserter.insert(reseller(`g1-${1000 + i}`))));
      const stored = await names('g1-');
      assert.equal(stored.length, 150);
      assert.equal(stored[0], 'g1-1000=name of g1-1000');
    });

    test('a bad row fails only its own caller; the rest of its group is stored', async () => {
      await insertRow(t.ctx.store.db, 'resellers', reseller('g2-taken'));
      const inserter = createGroupInserter(t.ctx.store.db, 'resellers');
      const results = await Promise.allSettled([
        inserter.insert(reseller('g2-a')),
        inserter.insert(reseller('g2-taken')),
        inserter.insert(reseller('g2-b')),
        inserter.insert({ ...reseller('g2-c'), name: null as unknown as string }),
        inserter.insert(reseller('g2-d')),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
      );
      assert.deepEqual(await names('g2-'), [
        'g2-a=name of g2-a',
        'g2-b=name of g2-b',
        'g2-d=name of g2-d',
        'g2-taken=name of g2-taken',
      ]);
    });

    test('rows of one statement must have the same columns; none is written otherwise', async () => {
      const { created_at: _, ...without } = reseller('g4-b');
      await assert.rejects(
        insertRows(t.ctx.store.db, 'resellers', [reseller('g4-a'), without as ReturnType<typeof reseller>]),
        /differ in their columns/,
      );
      await insertRows(t.ctx.store.db, 'resellers', [reseller('g4-c'), reseller('g4-d')]);
      await insertRows(t.ctx.store.db, 'resellers', [reseller('g4-e'), reseller('g4-f'), reseller('g4-g')]);
      assert.deepEqual(
        await names('g4-'),
        ['c', 'd', 'e', 'f', 'g'].map((x) => `g4-${x}=name of g4-${x}`),
      );
    });

    test('the insert text is reused with new values, never the values of an earlier row', async () => {
      for (const id of ['g3-x', 'g3-y', 'g3-z']) await insertRow(t.ctx.store.db, 'resellers', reseller(id));
      await t.ctx.store.db.transaction().execute(async (tx) => {
        const db: Kysely<Database> = tx;
        await insertRow(db, 'resellers', { ...reseller('g3-w'), name: 'in a transaction' });
      });
      assert.deepEqual(await names('g3-'), [
        'g3-w=in a transaction',
        'g3-x=name of g3-x',
        'g3-y=name of g3-y',
        'g3-z=name of g3-z',
      ]);
    });
  });
}
