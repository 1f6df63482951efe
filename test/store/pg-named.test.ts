/**
 * Named statements on PostgreSQL (src/store/pg-named.ts): the store's statements of fixed shape
 * are prepared once per connection and run by name; any other statement goes as plain text; a
 * named statement whose result changed shape (another process's migration gave its table a
 * column) still answers outside a transaction, and inside one fails as "not now", after which it
 * runs again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/store/database.ts';
import { isStoreUnavailable } from '../../src/store/errors.ts';
import { prepare, slot } from '../../src/store/prepared.ts';
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
