/**
 * Transactions begun together (src/store/transaction-group.ts), on both stores: each caller gets
 * its own body's result, or its own error; what a body wrote is there once its promise settles,
 * and a body that fails leaves nothing, without undoing the others. On PostgreSQL the bodies of
 * one turn share one transaction.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { insertRow } from '../../src/store/insert-row.ts';
import type { Database } from '../../src/store/schema.ts';
import { inGroupTransaction } from '../../src/store/transaction-group.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const NOW = 1_700_000_000_000;
const reseller = (id: string) => ({ id, name: `name of ${id}`, enabled: 1, created_at: NOW });

for (const store of testStores()) {
  describe(`transactions begun together (${store})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({}, { demo: false, store });
    });
    after(() => t.close());
    beforeEach(async () => {
      await t.ctx.store.db.deleteFrom('resellers').execute();
    });

    const stored = async () =>
      (await t.ctx.store.db.selectFrom('resellers').select('id').orderBy('id').execute()).map((r) => r.id);
    /** The transaction's id on PostgreSQL; none on SQLite. */
    const txId = async (tx: Kysely<Database>) =>
      store === 'postgres'
        ? String((await sql<{ x: string }>`select txid_current()::text as x`.execute(tx)).rows[0]?.x)
        : undefined;

    test('each caller gets its own result, and its writes are stored', async () => {
      const results = await Promise.all(
        ['a', 'b', 'c', 'd', 'e'].map((id) =>
          inGroupTransaction(t.ctx.store.db, async (tx) => {
            await insertRow(tx, 'resellers', reseller(id));
            const n = await tx.selectFrom('resellers').select('id').where('id', '=', id).execute();
            return { id, seen: n.length, tx: await txId(tx) };
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => `${r.id}:${r.seen}`),
        ['a:1', 'b:1', 'c:1', 'd:1', 'e:1'],
      );
      assert.deepEqual(await stored(), ['a', 'b', 'c', 'd', 'e']);
      // Begun in one turn: on PostgreSQL one transaction.
      if (store === 'postgres') assert.equal(new Set(results.map((r) => r.tx)).size, 1);
    });

    test('one that fails fails alone: nothing of it is stored, the others are, each once', async () => {
      const results = await Promise.allSettled(
        ['a', 'b', 'c', 'd'].map((id) =>
          inGroupTransaction(t.ctx.store.db, async (tx) => {
            await insertRow(tx, 'resellers', reseller(id));
            if (id === 'b') throw new Error(`b refused`);
            // After b's failure: still inside the transaction, never written on its own.
            await new Promise((r) => setTimeout(r, 20));
            await insertRow(tx, 'resellers', reseller(`${id}-2`));
            return id;
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => (r.status === 'fulfilled' ? r.value : String(r.reason))),
        ['a', 'Error: b refused', 'c', 'd'],
      );
      // Had a body's writes after b's failure left the group's transaction, the body's run alone
      // would have found its rows there and failed on their keys.
      assert.deepEqual(await stored(), ['a', 'a-2', 'c', 'c-2', 'd', 'd-2']);
    });

    test('a statement that fails in one body: the others are stored, each once', async () => {
      await insertRow(t.ctx.store.db, 'resellers', reseller('taken'));
      const results = await Promise.allSettled(
        ['x', 'taken', 'y'].map((id) =>
          inGroupTransaction(t.ctx.store.db, async (tx) => {
            await insertRow(tx, 'resellers', reseller(`${id}-first`));
            await insertRow(tx, 'resellers', reseller(id));
            return id;
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      assert.deepEqual(await stored(), ['taken', 'x', 'x-first', 'y', 'y-first']);
    });

    test('begun inside a transaction: part of it', async () => {
      await assert.rejects(
        t.ctx.store.db.transaction().execute(async (tx) => {
          await inGroupTransaction(tx, (inner) => insertRow(inner, 'resellers', reseller('inner')));
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      assert.deepEqual(await stored(), []);
    });

    test('a commit that fails fails every caller: no body runs again, nothing is stored', async (c) => {
      if (store !== 'postgres') return c.skip('SQLite: a plain transaction of its own');
      const results = await Promise.allSettled(
        ['a', 'b'].map((id) =>
          inGroupTransaction(t.ctx.store.db, async (tx) => {
            await insertRow(tx, 'resellers', reseller(id));
            // a's rows break a deferred rule: checked, and refused, at COMMIT only.
            if (id === 'a')
              await sql`create temp table deferred_check (n int unique deferrable initially deferred) on commit drop;
                insert into deferred_check values (1), (1)`.execute(tx);
            return id;
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['rejected', 'rejected'],
      );
      assert.deepEqual(await stored(), []);
    });
  });
}
