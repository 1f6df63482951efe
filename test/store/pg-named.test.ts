/**
 * Named statements on PostgreSQL (src/store/pg-named.ts): the store's statements of fixed shape
 * (prepared.ts, the inserts of whole rows, the guarded writes) are prepared once per connection
 * and run by name; any other statement goes as plain text; a
 * named statement whose result changed shape (another process's migration gave its table a
 * column) still answers outside a transaction, and inside one fails as "not now", after which it
 * runs again. An idle connection is kept for a minute, with what it prepared.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { createStore, openStore, PG_IDLE_CLOSE_MS, type Store } from '../../src/store/database.ts';
import { isStoreUnavailable } from '../../src/store/errors.ts';
import { gatedInsert, readGated, writeGated } from '../../src/store/gated-write.ts';
import { insertRow, insertRows } from '../../src/store/insert-row.ts';
import { prepare, slot } from '../../src/store/prepared.ts';
import type { Database } from '../../src/store/schema.ts';
import { readTogether } from '../../src/store/statement-batch.ts';
import { statementCounter } from '../helpers/statement-counter.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

const resellerById = prepare({ id: slot<string>() }, (db, s) =>
  db.selectFrom('resellers').selectAll().where('id', '=', s.id),
);
const rename = prepare({ id: slot<string>(), name: slot<string>() }, (db, s) =>
  db.updateTable('resellers').set({ name: s.name }).where('id', '=', s.id),
);

describe('named statements on PostgreSQL', {
  skip: !testStores().includes('postgres') && 'needs PostgreSQL (npm test starts one)',
}, () => {
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  let store: Store;
  /** What the store's one connection has prepared. */
  const prepared = async () =>
    (
      await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(store.db)
    ).rows.map((r) => r.statement);

  /** The resellers whose id begins with `prefix`, each as `id created_at`, in id order. */
  const stampsOf = async (prefix: string) =>
    (
      await store.db
        .selectFrom('resellers')
        .select(['id', 'created_at'])
        .where('id', 'like', `${prefix}%`)
        .orderBy('id')
        .execute()
    ).map((r) => `${r.id} ${Number(r.created_at)}`);
  /** Of `now`, the texts not in `before` are one, written with arrays. */
  const assertOneArrayText = (before: readonly string[], now: readonly string[]) => {
    const added = now.filter((t) => !before.includes(t));
    assert.equal(added.length, 1, added.join('\n'));
    assert.match(added[0] ?? '', /unnest\(/);
  };

  before(async () => {
    database = await createPgDatabase();
    // One connection: every statement below runs on the connection that prepared the ones before.
    store = await openStore({ databaseUrl: database.url, dataDir: '', poolSize: 1 });
    await sql`insert into resellers (id, name, enabled, created_at) values ('r1', 'one', 1, 0), ('r2', 'two', 1, 0)`.execute(
      store.db,
    );
  });
  after(async () => {
    await store.close();
    await database.drop();
  });

  test('a statement of fixed shape is prepared on its first run and answers each run with its values', async () => {
    assert.equal((await resellerById.first(store.db, { id: 'r1' }))?.name, 'one');
    const text = (await prepared()).find((s) => s.includes('from "resellers"') && s.includes('"id" = $1'));
    assert.ok(text, 'the read is prepared on the connection');
    assert.equal((await resellerById.first(store.db, { id: 'r2' }))?.name, 'two');
    assert.equal(await resellerById.first(store.db, { id: 'nobody' }), undefined);
    // A write by name: its rows changed are counted as a plain statement's are.
    assert.equal((await rename.execute(store.db, { id: 'r2', name: 'deux' })).numAffectedRows, 1n);
    assert.equal((await rename.execute(store.db, { id: 'nobody', name: 'x' })).numAffectedRows, 0n);
    assert.equal((await resellerById.first(store.db, { id: 'r2' }))?.name, 'deux');
    // In a transaction, on its connection, by name too; and rolled back with it.
    await store.db
      .transaction()
      .execute(async (tx) => {
        await rename.execute(tx, { id: 'r1', name: 'changed' });
        assert.equal((await resellerById.first(tx, { id: 'r1' }))?.name, 'changed');
        throw new Error('roll back');
      })
      .catch(() => {});
    assert.equal((await resellerById.first(store.db, { id: 'r1' }))?.name, 'one');
  });

  test('inserts of whole rows and guarded writes are prepared once per shape, and run by name after', async () => {
    const row = (id: string) => ({ id, name: `name ${id}`, enabled: 1, created_at: 0 });
    await insertRow(store.db, 'resellers', row('i1'));
    await insertRows(store.db, 'resellers', [row('i2'), row('i3')]);
    const guard = (id: string, name: string) =>
      ({ table: 'resellers', set: { name }, where: { id } }) as const;
    assert.equal(
      await writeGated(store.db, guard('i1', 'guarded'), [gatedInsert('resellers', row('i4'))]),
      true,
    );
    const texts = await prepared();
    const insertOne = texts.filter((t) => t.startsWith('insert into "resellers"') && !t.includes('), ('));
    const insertTwo = texts.filter((t) => t.startsWith('insert into "resellers"') && t.includes('), ('));
    // A guarded write is one text whatever the number of writes in it (its rows as arrays).
    const gated = texts.filter((t) =>
      t.startsWith('with g as (update "resellers" as t set "name" = v.c0 from (select '),
    );
    assert.deepEqual([insertOne.length, insertTwo.length, gated.length], [1, 1, 1]);
    // Run again, with other values: by the same names, nothing more prepared, each run's values written.
    await insertRow(store.db, 'resellers', row('i5'));
    await insertRows(store.db, 'resellers', [row('i6'), row('i7')]);
    assert.equal(
      await writeGated(store.db, guard('i2', 'guarded too'), [gatedInsert('resellers', row('i8'))]),
      true,
    );
    assert.equal(
      await writeGated(store.db, guard('nobody', 'x'), [gatedInsert('resellers', row('i9'))]),
      false,
    );
    assert.deepEqual(await prepared(), texts);
    const names = await store.db
      .selectFrom('resellers')
      .select(['id', 'name'])
      .where('id', 'like', 'i%')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      names.map((r) => `${r.id} ${r.name}`),
      [
        'i1 guarded',
        'i2 guarded too',
        'i3 name i3',
        'i4 name i4',
        'i5 name i5',
        'i6 name i6',
        'i7 name i7',
        'i8 name i8',
      ],
    );
  });

  test('guarded writes of one shape made together: one text however many, each answered for itself', async () => {
    const row = (id: string) => ({ id, name: `name ${id}`, enabled: 1, created_at: 0 });
    await insertRows(store.db, 'resellers', ['g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7', 'g8', 'g9'].map(row));
    // Stamps g{i} while its name is still the first; a second reseller, gx{i}, with it.
    const stamp = (i: number, name = `name g${i}`) =>
      writeGated(store.db, { table: 'resellers', set: { created_at: i }, where: { id: `g${i}`, name } }, [
        gatedInsert('resellers', row(`gx${i}`)),
      ]);
    const gatedTexts = async () =>
      (await prepared()).filter((t) => /^with g0? as \(update "resellers"/.test(t));
    const before = await gatedTexts();
    // Made in one turn each: one write, then three (the second's guard matches nothing), then five.
    assert.deepEqual(await Promise.all([stamp(1)]), [true]);
    assert.deepEqual(await Promise.all([stamp(2), stamp(3, 'someone else'), stamp(4)]), [true, false, true]);
    assert.deepEqual(await Promise.all([5, 6, 7, 8, 9].map((i) => stamp(i))), [true, true, true, true, true]);
    assertOneArrayText(before, await gatedTexts());
    assert.deepEqual(await stampsOf('g'), [
      'g1 1',
      'g2 2',
      'g3 0',
      'g4 4',
      'g5 5',
      'g6 6',
      'g7 7',
      'g8 8',
      'g9 9',
      'gx1 0',
      'gx2 0',
      'gx4 0',
      'gx5 0',
      'gx6 0',
      'gx7 0',
      'gx8 0',
      'gx9 0',
    ]);
  });

  test('reads and guarded reads of one shape made together: one text however many, each answered for itself', async () => {
    const row = (id: string) => ({ id, name: `name ${id}`, enabled: 1, created_at: 0 });
    await insertRows(store.db, 'resellers', ['h1', 'h2', 'h3', 'h4', 'h5'].map(row));
    const byId = (db: Kysely<Database>, id: string) =>
      db.selectFrom('resellers').select(['id', 'name']).where('id', '=', id).compile();
    const names = (rows: readonly (readonly { name: string }[])[]) => rows.map((r) => r.map((x) => x.name));
    const texts = async (mark: string) => (await prepared()).filter((t) => t.includes(mark));
    const readsBefore = await texts('as gate_i');
    // Two reads in one turn, then three (one finds no one): one text for both.
    const two = await Promise.all(['h1', 'h2'].map((id) => readTogether(store.db, byId(store.db, id), id)));
    assert.deepEqual(names(two), [['name h1'], ['name h2']]);
    const three = await Promise.all(
      ['h3', 'nobody', 'h5'].map((id) => readTogether(store.db, byId(store.db, id), id)),
    );
    assert.deepEqual(names(three), [['name h3'], [], ['name h5']]);
    assertOneArrayText(readsBefore, await texts('as gate_i'));

    // Guarded reads, in a transaction: two, then three (the second's guard matches nothing).
    const guardedBefore = await texts('gate_changed');
    const stamp = (tx: Kysely<Database>, i: number, read: string, name = `name h${i}`) =>
      readGated(
        tx,
        { table: 'resellers', set: { created_at: i }, where: { id: `h${i}`, name } },
        byId(tx, read),
      );
    const answer = (a: { changed: boolean; row: { name: string } | undefined }) =>
      `${a.changed} ${a.row?.name}`;
    await store.db.transaction().execute(async (tx) => {
      assert.deepEqual((await Promise.all([stamp(tx, 1, 'h2'), stamp(tx, 2, 'nobody')])).map(answer), [
        'true name h2',
        'true undefined',
      ]);
      const answers = await Promise.all([
        stamp(tx, 3, 'h1'),
        stamp(tx, 4, 'h1', 'someone else'),
        stamp(tx, 5, 'h3'),
      ]);
      assert.deepEqual(answers.map(answer), ['true name h1', 'false undefined', 'true name h3']);
    });
    assertOneArrayText(guardedBefore, await texts('gate_changed'));
    assert.deepEqual(await stampsOf('h'), ['h1 1', 'h2 2', 'h3 3', 'h4 0', 'h5 5']);

    // A read that takes a value other than a string is made as copies, a text per number.
    const enabledH1 = (enabled: number) =>
      store.db
        .selectFrom('resellers')
        .select(['id', 'name'])
        .where('enabled', '=', enabled)
        .where('id', '=', 'h1')
        .compile();
    const copiesBefore = await texts('as gate_i');
    assert.deepEqual(
      names(
        await Promise.all([
          readTogether(store.db, enabledH1(1), 'a'),
          readTogether(store.db, enabledH1(0), 'b'),
        ]),
      ),
      [['name h1'], []],
    );
    const copies = (await texts('as gate_i')).filter((t) => !copiesBefore.includes(t));
    assert.equal(copies.length, 1, copies.join('\n'));
    assert.match(copies[0] ?? '', /union all/);
    assert.doesNotMatch(copies[0] ?? '', /unnest\(/);
  });

  test('guarded reads made together lock what they read only for the guards that changed a row', async () => {
    const row = (id: string) => ({ id, name: `name ${id}`, enabled: 1, created_at: 0 });
    await insertRows(store.db, 'resellers', ['k1', 'k2', 'k3', 'k4'].map(row));
    const other = await openStore({ databaseUrl: database.url, dataDir: '', poolSize: 1 });
    /** Whether another connection can lock `id` now (it waits for nothing). */
    const free = (id: string) =>
      sql`select id from resellers where id = ${id} for update nowait`.execute(other.db).then(
        () => true,
        (err: { code?: string }) => {
          if (err.code === '55P03') return false;
          throw err;
        },
      );
    try {
      const counter = statementCounter();
      await store.db.transaction().execute(async (outer) => {
        const tx = outer.withPlugin(counter);
        const locking = (id: string) =>
          tx.selectFrom('resellers').select('id').where('id', '=', id).forUpdate().compile();
        // One shape (the guards match on id and name): one statement for both.
        const answers = await Promise.all([
          readGated(
            tx,
            { table: 'resellers', set: { created_at: 1 }, where: { id: 'k1', name: 'not its name' } },
            locking('k2'),
          ),
          readGated(
            tx,
            { table: 'resellers', set: { created_at: 1 }, where: { id: 'k3', name: 'name k3' } },
            locking('k4'),
          ),
        ]);
        assert.deepEqual(
          answers.map((a) => a.changed),
          [false, true],
        );
        assert.equal(counter.count, 1);
        assert.equal(await free('k2'), true, 'the read of the guard that changed nothing locked nothing');
        assert.equal(await free('k4'), false, 'the read of the guard that changed its row holds its lock');
        assert.equal(await free('k3'), false, "the guard's row is locked");
      });
      assert.equal(await free('k4'), true, 'released with the transaction');
    } finally {
      await other.close();
    }
  });

  test('a store whose column types were not read (opened without migrating) writes them as copies', async () => {
    const plain = createStore({ databaseUrl: database.url, dataDir: '', poolSize: 1 });
    try {
      const answers = await Promise.all(
        ['r1', 'r2'].map((id) =>
          writeGated(plain.db, { table: 'resellers', set: { created_at: 7 }, where: { id } }, [
            gatedInsert('resellers', { id: `copy ${id}`, name: `copy ${id}`, enabled: 1, created_at: 0 }),
          ]),
        ),
      );
      assert.deepEqual(answers, [true, true]);
      const texts = (
        await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(plain.db)
      ).rows.map((r) => r.statement);
      assert.ok(texts.some((t) => t.startsWith('with g0 as (update "resellers"') && t.includes('g1 as (')));
      const copies = await plain.db
        .selectFrom('resellers')
        .select('id')
        .where('id', 'like', 'copy %')
        .execute();
      assert.equal(copies.length, 2);
    } finally {
      await plain.close();
    }
  });

  test("an idle connection is kept longer than pg's default allows (10 s), and with it what it prepared", async () => {
    const backend = async () =>
      (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(store.db)).rows[0]!.pid;
    assert.equal((await resellerById.first(store.db, { id: 'r1' }))?.name, 'one');
    const before = await backend();
    const text = (await prepared()).find((s) => s.includes('from "resellers"') && s.includes('"id" = $1'));
    assert.ok(text, 'the read is prepared on the connection');
    // Longer than pg's own idle limit, well under the store's (PG_IDLE_CLOSE_MS).
    assert.ok(PG_IDLE_CLOSE_MS > 12_000);
    await new Promise((r) => setTimeout(r, 11_000));
    assert.equal(await backend(), before, 'the same connection, not a new one');
    assert.ok((await prepared()).includes(text), 'still prepared: not planned afresh');
  });

  test('a statement built per call goes as plain text: nothing is prepared for it', async () => {
    const before = await prepared();
    await store.db.selectFrom('resellers').select('name').where('name', '=', 'one').execute();
    await sql`select count(*) from resellers where enabled = ${1}`.execute(store.db);
    assert.deepEqual(await prepared(), before);
  });

  test('after another process adds a column: answers outside a transaction; inside, not now, then again', async () => {
    assert.equal((await resellerById.first(store.db, { id: 'r1' }))?.name, 'one');
    // Another connection, as another process's migration would.
    const other = await openStore({ databaseUrl: database.url, dataDir: '', poolSize: 1 });
    try {
      await sql`alter table resellers add column added_later integer`.execute(other.db);
    } finally {
      await other.close();
    }
    // Outside a transaction: the same read answers, with the new column.
    const row = await resellerById.first(store.db, { id: 'r1' });
    assert.equal(row?.name, 'one');
    assert.ok(row && 'added_later' in row, 'the row as the table now is');

    await sql`alter table resellers add column added_later_too integer`.execute(store.db);
    // Inside a transaction: its statement fails, as "not now" (a 503; a job's next attempt)...
    const failed = await store.db
      .transaction()
      .execute(async (tx) => {
        await rename.execute(tx, { id: 'r1', name: 'in the transaction' });
        await resellerById.first(tx, { id: 'r1' });
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(failed, 'the transaction failed');
    assert.equal(isStoreUnavailable(failed), true, String(failed));
    // ... nothing of it is kept, and done again it succeeds.
    assert.equal((await resellerById.first(store.db, { id: 'r1' }))?.name, 'one');
    await store.db.transaction().execute(async (tx) => {
      await rename.execute(tx, { id: 'r1', name: 'in the transaction' });
      assert.equal((await resellerById.first(tx, { id: 'r1' }))?.name, 'in the transaction');
    });
  });
});
