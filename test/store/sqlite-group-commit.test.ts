/**
 * Group commit of SQLite transactions (src/store/sqlite-group-commit.ts): transactions that
 * wait for the connection share a commit, and nothing a caller is told changes: each
 * transaction's `execute` settles after the commit that holds its writes, one transaction's
 * failure undoes only its own writes; a write outside a transaction joins the group as one
 * more member, and a read outside a transaction made while a group is open reads what is
 * committed, on a read-only connection, without waiting for the group or ending it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, mock, test } from 'node:test';
import { Kysely, sql } from 'kysely';
import { openStore } from '../../src/store/database.ts';
import { createNodeSqliteDialect } from '../../src/store/node-sqlite.ts';
import { GroupRolledBack } from '../../src/store/sqlite-group-commit.ts';

interface Db {
  t: { id: number; note: string };
}

let dir: string;
let file: string;
const opened: Kysely<Db>[] = [];
let reader: DatabaseSync;

const open = (busyTimeoutMs?: number) => {
  const db = new Kysely<Db>({ dialect: createNodeSqliteDialect(file, busyTimeoutMs) });
  opened.push(db);
  return db;
};
/** What another connection (another process, or the server's read connection) sees: committed rows only. */
const committedIds = () =>
  (reader.prepare('select id from t order by id').all() as { id: number }[]).map((r) => r.id);
/** Lets every promise chain that is ready run, without letting the event loop turn (no setImmediate). */
const drainMicrotasks = async () => {
  for (let i = 0; i < 500; i++) await null;
};
const insert = (db: Kysely<Db>, id: number) =>
  db
    .insertInto('t')
    .values({ id, note: `row ${id}` })
    .execute();

/**
 * A deferred constraint is checked at COMMIT: the one failure a group's commit can meet besides
 * the disk's. The store's schema has none (a test below). `failsAtCommit` breaks it.
 */
const withDeferredConstraint = async (db: Kysely<Db>) => {
  await sql`create table parent (id integer primary key)`.execute(db);
  await sql`create table child (id integer primary key, parent_id integer not null references parent (id) deferrable initially deferred)`.execute(
    db,
  );
};
const failsAtCommit = (tx: Kysely<Db>) => sql`insert into child (id, parent_id) values (1, 99)`.execute(tx);

/**
 * The group's clock (performance.now), frozen so that no test depends on the machine's speed: a
 * group open for 20 ms is committed at the next release, and a loaded machine (CI, with
 * coverage) can take that long between a begin and a release. `advance` moves it.
 */
let now = 0;
const advance = (ms: number) => {
  now += ms;
};

beforeEach(async () => {
  now = 0;
  mock.method(performance, 'now', () => now);
  dir = mkdtempSync(join(tmpdir(), 'vrp-group-commit-'));
  file = join(dir, 'g.sqlite');
  await sql`create table t (id integer primary key, note text not null)`.execute(open());
  reader = new DatabaseSync(file, { readOnly: true });
});

afterEach(async () => {
  mock.restoreAll();
  reader.close();
  for (const db of opened.splice(0)) await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

test('transactions that wait for one another are each told done only once their writes are committed', async () => {
  const db = open();
  const seenAtResolve = new Map<number, number[]>();
  await Promise.all(
    [1, 2, 3, 4, 5, 6, 7, 8].map((id) =>
      db
        .transaction()
        .execute((tx) => insert(tx, id))
        .then(() => seenAtResolve.set(id, committedIds())),
    ),
  );
  for (const [id, seen] of seenAtResolve) assert.ok(seen.includes(id), `row ${id} committed when told done`);
  assert.deepEqual(committedIds(), [1, 2, 3, 4, 5, 6, 7, 8]);
});

test('a transaction that fails among others undoes only its own writes', async () => {
  const db = open();
  const results = await Promise.allSettled(
    [1, 2, 3].map((id) =>
      db.transaction().execute(async (tx) => {
        await insert(tx, id);
        await insert(tx, id * 10);
        if (id === 2) throw new Error('refused');
      }),
    ),
  );
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  assert.deepEqual(committedIds(), [1, 3, 10, 30]);
  // A statement error (a duplicate key) fails its transaction alone, too.
  const again = await Promise.allSettled([
    db.transaction().execute((tx) => insert(tx, 4)),
    db.transaction().execute((tx) => insert(tx, 1)),
    db.transaction().execute((tx) => insert(tx, 5)),
  ]);
  assert.deepEqual(
    again.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  assert.deepEqual(committedIds(), [1, 3, 4, 5, 10, 30]);
});

test('when SQLite rolls the whole group back, the transactions that had ended in it fail too', async () => {
  const db = open();
  const results = await Promise.allSettled([
    db.transaction().execute((tx) => insert(tx, 1)),
    db.transaction().execute(async (tx) => {
      await insert(tx, 2);
      // What SQLite does on its own on some errors (a full disk): the whole transaction goes.
      await sql`rollback`.execute(tx);
      throw new Error('the group is gone');
    }),
    db.transaction().execute((tx) => insert(tx, 3)),
  ]);
  assert.equal(results[0].status, 'rejected');
  assert.ok((results[0] as PromiseRejectedResult).reason instanceof GroupRolledBack);
  assert.equal(results[1].status, 'rejected');
  assert.equal(results[2].status, 'fulfilled', 'the next group is not concerned');
  assert.deepEqual(committedIds(), [3]);
});

test('a transaction with nothing waiting behind it is committed within a turn of the event loop, with a plain write that joined it', async () => {
  const db = open();
  let done = false;
  const first = db
    .transaction()
    .execute((tx) => insert(tx, 1))
    .then(() => {
      done = true;
    });
  await drainMicrotasks();
  assert.equal(done, false, 'left open for company for a turn of the event loop');
  assert.deepEqual(committedIds(), []);
  // A write outside a transaction joins the open group, and is told done with it.
  await insert(db, 2);
  assert.deepEqual(committedIds(), [1, 2]);
  await first;
  assert.equal(done, true);

  const alone = db.transaction().execute((tx) => insert(tx, 3));
  await new Promise((resolve) => setImmediate(resolve));
  await alone;
  assert.deepEqual(committedIds(), [1, 2, 3]);
});

test('a group open for 20 ms is committed when the statement that ends in it is released, without waiting for company', async () => {
  const db = open();
  const first = db.transaction().execute((tx) => insert(tx, 1));
  await drainMicrotasks();
  const young = insert(db, 2);
  await drainMicrotasks();
  assert.deepEqual(committedIds(), [], 'younger than 20 ms, the group stays open for company');
  advance(20);
  const old = insert(db, 3);
  await drainMicrotasks();
  assert.deepEqual(committedIds(), [1, 2, 3], 'committed at once, within the same turn of the event loop');
  await Promise.all([first, young, old]);
});

test('another connection of the same process takes the write lock without waiting for a group left open', async () => {
  const a = open();
  // No busy timeout: had it to wait for the lock (which this very thread holds, so the wait
  // could only end in the timeout), it would fail at once with SQLITE_BUSY.
  const b = open(0);
  const first = a.transaction().execute((tx) => insert(tx, 1));
  await drainMicrotasks();
  assert.deepEqual(committedIds(), [], 'the group is open, holding the write lock');
  await b.transaction().execute((tx) => insert(tx, 2));
  await insert(b, 3);
  await first;
  assert.deepEqual(committedIds(), [1, 2, 3]);
});

test('a lone writer stops waiting a turn of the event loop for company that does not come', async () => {
  const db = open();
  // Each of these finds nobody joining while its group waits.
  for (let id = 1; id <= 20; id++) await db.transaction().execute((tx) => insert(tx, id));
  let withoutWaiting = 0;
  for (let id = 21; id <= 36; id++) {
    // Its commit, not its being told done: that waits for the WAL's flush, on the thread pool.
    let committedBeforeTurn = false;
    setImmediate(() => {
      committedBeforeTurn = committedIds().includes(id);
    });
    await db.transaction().execute((tx) => insert(tx, id));
    if (committedBeforeTurn) withoutWaiting++;
  }
  // Now and then it still tries, in case company has come back.
  assert.ok(withoutWaiting >= 12, `${withoutWaiting} of 16 committed without waiting a turn`);
  assert.equal(committedIds().length, 36);
});

test('a store closed while a transaction runs keeps the transactions that ended, none of the one running', async () => {
  const db = open();
  const ended = db.transaction().execute((tx) => insert(tx, 1));
  let open_!: () => void;
  const gate = new Promise<void>((resolve) => {
    open_ = resolve;
  });
  const running = db.transaction().execute(async (tx) => {
    await insert(tx, 2);
    await gate;
    await insert(tx, 3);
  });
  await drainMicrotasks();
  assert.deepEqual(committedIds(), [], 'the first has ended in the group, the second runs in it');
  await db.destroy();
  open_();
  const [a, b] = await Promise.allSettled([ended, running]);
  assert.equal(a.status, 'fulfilled');
  assert.equal(b.status, 'rejected');
  assert.deepEqual(committedIds(), [1]);
});

test('the connection is handed out in the order it was asked for', async () => {
  const db = open();
  await sql`create table arrivals (n integer primary key autoincrement, id integer not null)`.execute(db);
  await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      db.transaction().execute((tx) => sql`insert into arrivals (id) values (${i})`.execute(tx)),
    ),
  );
  const order = reader.prepare('select id from arrivals order by n').all() as { id: number }[];
  assert.deepEqual(
    order.map((r) => r.id),
    Array.from({ length: 20 }, (_, i) => i),
  );
});

test('a transaction that cannot begin (another process holds the write lock) fails alone; the next one runs', async () => {
  const db = open(100);
  const other = new DatabaseSync(file);
  other.exec('begin immediate');
  try {
    await assert.rejects(
      db.transaction().execute((tx) => insert(tx, 1)),
      /locked|busy/i,
    );
  } finally {
    other.exec('rollback');
    other.close();
  }
  await db.transaction().execute((tx) => insert(tx, 2));
  assert.deepEqual(committedIds(), [2]);
});

test('a COMMIT that fails fails every transaction of its group and keeps none of their writes', async () => {
  const db = open();
  await withDeferredConstraint(db);
  const results = await Promise.allSettled([
    db.transaction().execute((tx) => insert(tx, 1)),
    db.transaction().execute(failsAtCommit),
  ]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'rejected'],
  );
  assert.deepEqual(committedIds(), []);
  await db.transaction().execute((tx) => insert(tx, 2));
  assert.deepEqual(committedIds(), [2]);
});

test("the store's SQLite schema has no deferred constraint, and the code no transaction that would be told done before its group commits", async () => {
  const storeDir = mkdtempSync(join(tmpdir(), 'vrp-group-commit-schema-'));
  try {
    await (await openStore({ databaseUrl: undefined, dataDir: storeDir })).close();
    const schema = new DatabaseSync(join(storeDir, 'vrp.sqlite'), { readOnly: true });
    const deferred = schema
      .prepare("select name from sqlite_master where lower(sql) like '%deferrable%'")
      .all() as { name: string }[];
    schema.close();
    assert.deepEqual(deferred, []);
  } finally {
    rmSync(storeDir, { recursive: true, force: true });
  }
  const src = join(import.meta.dirname, '../../src');
  const offending = readdirSync(src, { recursive: true, encoding: 'utf8' })
    // postgres-*.ts: code that runs on PostgreSQL only, where there is no group commit.
    .filter(
      (f) =>
        f.endsWith('.ts') && !f.endsWith('sqlite-group-commit.ts') && !/(^|\/)postgres-[^/]*\.ts$/.test(f),
    )
    .filter((f) => /\.startTransaction\(|\.connection\(\)/.test(readFileSync(join(src, f), 'utf8')));
  assert.deepEqual(offending, [], 'startTransaction() and db.connection() are told done before the commit');
});

test('a transaction refused in a group is told after the group commits (its refusal may rest on what the group wrote)', async () => {
  const db = open();
  let seenAtRefusal: number[] | undefined;
  const results = await Promise.allSettled([
    db.transaction().execute((tx) => insert(tx, 1)),
    db
      .transaction()
      .execute(async (tx) => {
        await insert(tx, 2);
        throw new Error('refused');
      })
      .catch((err: unknown) => {
        seenAtRefusal = committedIds();
        throw err;
      }),
    db.transaction().execute((tx) => insert(tx, 3)),
  ]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  assert.deepEqual(seenAtRefusal, [1, 3], 'the group it ran in was committed when it was told');
});

test('a write outside a transaction joins the open group instead of committing it: both are committed together', async () => {
  const db = open();
  const first = db.transaction().execute((tx) => insert(tx, 1));
  await drainMicrotasks();
  let plainDone = false;
  const plain = insert(db, 2).then(() => {
    plainDone = true;
  });
  await drainMicrotasks();
  assert.deepEqual(committedIds(), [], 'the plain write did not commit the group (nor itself) on its own');
  assert.equal(plainDone, false);
  await Promise.all([first, plain]);
  assert.deepEqual(committedIds(), [1, 2]);
});

test('writes outside a transaction that come together share one group; one that fails fails alone', async () => {
  const db = open();
  await insert(db, 1);
  const results = await Promise.allSettled([insert(db, 2), insert(db, 1), insert(db, 3)]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  assert.match(String((results[1] as PromiseRejectedResult).reason), /UNIQUE|constraint/i);
  assert.deepEqual(committedIds(), [1, 2, 3]);
  // A failed update changes nothing of its own, and the group goes on.
  const again = await Promise.allSettled([
    db.transaction().execute((tx) => insert(tx, 4)),
    db.updateTable('t').set({ id: 1 }).where('id', '=', 2).execute(),
    db.updateTable('t').set({ note: 'changed' }).where('id', '=', 3).execute(),
  ]);
  assert.deepEqual(
    again.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  const rows = reader.prepare('select id, note from t order by id').all() as { id: number; note: string }[];
  assert.deepEqual(
    rows.map((r) => `${r.id} ${r.note}`),
    ['1 row 1', '2 row 2', '3 changed', '4 row 4'],
  );
});

test('a read outside a transaction made while a group is open answers at once with what is committed, and leaves the group open', async () => {
  const db = open();
  await db.transaction().execute((tx) => insert(tx, 1));
  const second = db.transaction().execute((tx) => insert(tx, 2));
  await drainMicrotasks();
  assert.deepEqual(committedIds(), [1], 'the second is in a group left open');
  let answered: number[] | undefined;
  const read = db
    .selectFrom('t')
    .select('id')
    .execute()
    .then((rows) => {
      answered = rows.map((r) => r.id);
    });
  await drainMicrotasks();
  assert.deepEqual(
    answered,
    [1],
    'answered without waiting for the group, and without its writes (not yet told done)',
  );
  assert.deepEqual(committedIds(), [1], 'the read did not commit the group');
  await Promise.all([read, second]);
  assert.deepEqual(committedIds(), [1, 2]);
  // With no group open, a read runs on the main connection at once, as before.
  assert.deepEqual(
    (await db.selectFrom('t').select('id').execute()).map((r) => r.id),
    [1, 2],
  );
});

test('a read made while a group is open never shows its writes, so none that a failed COMMIT takes back', async () => {
  const db = open();
  await withDeferredConstraint(db);
  const results = await Promise.allSettled([
    db.transaction().execute((tx) => insert(tx, 1)),
    db.transaction().execute(failsAtCommit),
    db.selectFrom('t').select('id').execute(),
  ]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'rejected', 'fulfilled'],
  );
  assert.deepEqual((results[2] as PromiseFulfilledResult<{ id: number }[]>).value, []);
  assert.deepEqual(committedIds(), []);
});

test('a write outside a transaction that makes SQLite roll the whole group back fails, and so do the transactions that had ended in the group', async () => {
  const db = open();
  // RAISE(ROLLBACK) ends the whole transaction: what SQLite does on its own on a full disk.
  await sql`create trigger whole_group_goes before insert on t when new.id = 99
    begin select raise(rollback, 'the whole group goes'); end`.execute(db);
  const results = await Promise.allSettled([
    db.transaction().execute((tx) => insert(tx, 1)),
    insert(db, 99),
    insert(db, 3),
  ]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'rejected', 'fulfilled'],
  );
  assert.ok((results[0] as PromiseRejectedResult).reason instanceof GroupRolledBack);
  assert.match(String((results[1] as PromiseRejectedResult).reason), /the whole group goes/);
  assert.deepEqual(committedIds(), [3], 'the next group is not concerned');
});
