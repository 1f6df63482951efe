import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { createGroupInserter, createGroupWriter } from '../../src/store/group-insert.ts';
import { insertRow, insertRows } from '../../src/store/insert-row.ts';
import type { Database } from '../../src/store/schema.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const reseller = (id: string) => ({ id, name: `name of ${id}`, enabled: 1, created_at: 1_700_000_000_000 });
const quota = (id: string, services: number) => ({
  reseller_id: id,
  services,
  cpu: null,
  ram: null,
  hdd: null,
  ip: null,
  backup: null,
  updated_at: 1_700_000_000_000,
});

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
      const inserter = createGroupInserter(t.ctx.store.db, t.ctx.store.features, 'resellers');
      await Promise.all(Array.from({ length: 150 }, (_, i) => inserter.insert(reseller(`g1-${1000 + i}`))));
      const stored = await names('g1-');
      assert.equal(stored.length, 150);
      assert.equal(stored[0], 'g1-1000=name of g1-1000');
    });

    test('a bad row fails only its own caller; the rest of its group is stored', async () => {
      await insertRow(t.ctx.store.db, 'resellers', reseller('g2-taken'));
      const inserter = createGroupInserter(t.ctx.store.db, t.ctx.store.features, 'resellers');
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

    const quotas = async (prefix: string) =>
      (
        await t.ctx.store.db
          .selectFrom('reseller_quotas')
          .select(['reseller_id', 'services'])
          .where('reseller_id', 'like', `${prefix}%`)
          .execute()
      )
        .map((r) => `${r.reseller_id}:${r.services}`)
        .sort();

    test('sets of rows of two tables are written together, each set all or none', async () => {
      const writer = createGroupWriter(t.ctx.store.db, t.ctx.store.features);
      const results = await Promise.allSettled([
        writer.insert({ resellers: reseller('g5-a'), reseller_quotas: quota('g5-a', 1) }),
        // Its quota names a reseller that does not exist: neither row may stay.
        writer.insert({ resellers: reseller('g5-b'), reseller_quotas: quota('g5-nobody', 2) }),
        writer.insert({ resellers: reseller('g5-c'), reseller_quotas: quota('g5-c', 3) }),
        // Its reseller is bad (no name): its quota must not stay either.
        writer.insert({
          resellers: { ...reseller('g5-d'), name: null as unknown as string },
          reseller_quotas: quota('g5-d', 4),
        }),
        writer.insert({ resellers: reseller('g5-e') }),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
      );
      assert.deepEqual(await names('g5-'), ['g5-a=name of g5-a', 'g5-c=name of g5-c', 'g5-e=name of g5-e']);
      assert.deepEqual(await quotas('g5-'), ['g5-a:1', 'g5-c:3']);
    });

    if (store === 'postgres') {
      test('on PostgreSQL, a group of several tables is one statement, no transaction around it', async () => {
        const sent: string[] = [];
        const pool = new pg.Pool({ connectionString: t.ctx.config.databaseUrl, max: 1 });
        const db = new Kysely<Database>({
          dialect: new PostgresDialect({ pool }),
          log: (e) => {
            if (e.level === 'query') sent.push(e.query.sql);
          },
        });
        try {
          const writer = createGroupWriter(db, t.ctx.store.features);
          await Promise.all(
            ['x', 'y', 'z'].map((k, i) =>
              writer.insert({ resellers: reseller(`g6-${k}`), reseller_quotas: quota(`g6-${k}`, i) }),
            ),
          );
          assert.equal(sent.length, 1, sent.join('\n'));
          assert.match(
            sent[0] ?? '',
            /^with "w0" as \(insert into "resellers" .*\) insert into "reseller_quotas"/,
          );
          assert.deepEqual(await quotas('g6-'), ['g6-x:0', 'g6-y:1', 'g6-z:2']);
        } finally {
          await db.destroy();
        }
      });
    }

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
