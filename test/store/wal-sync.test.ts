/**
 * Durable commits on SQLite (src/store/wal-sync.ts): a commit is visible at once, but whoever
 * made it is told done only once a flush of the WAL that began after it has finished; commits
 * during a flush share the next; a flush that fails fails its commits and everything after.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, test } from 'node:test';
import { Kysely, sql } from 'kysely';
import { isStoreUnavailable } from '../../src/store/errors.ts';
import { createNodeSqliteDialect } from '../../src/store/node-sqlite.ts';
import { WalNotDurable } from '../../src/store/wal-sync.ts';
import { waitUntil } from '../helpers/budget.ts';

interface Db {
  t: { id: number };
}

/** A flush the test lets through one at a time, or fails. */
class HeldFlushes {
  readonly started: { file: FileHandle; release: () => void; fail: (err: Error) => void }[] = [];
  readonly sync = (file: FileHandle) =>
    new Promise<void>((release, fail) => {
      this.started.push({ file, release, fail });
    }).then(() => file.datasync());
}

let dir: string;
let file: string;
let reader: DatabaseSync | undefined;
const opened: Kysely<Db>[] = [];

const open = (flushes: HeldFlushes) => {
  const db = new Kysely<Db>({ dialect: createNodeSqliteDialect(file, 5000, flushes.sync) });
  opened.push(db);
  return db;
};
const committedIds = () => {
  reader ??= new DatabaseSync(file, { readOnly: true });
  return (reader.prepare('select id from t order by id').all() as { id: number }[]).map((r) => r.id);
};
/** Whether `promise` has settled, after the callbacks that are ready have run. */
const settled = async (promise: Promise<unknown>) => {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vrp-wal-sync-'));
  file = join(dir, 'w.sqlite');
  const setup = new Kysely<Db>({ dialect: createNodeSqliteDialect(file) });
  await sql`create table t (id integer primary key)`.execute(setup);
  await setup.destroy();
});

afterEach(async () => {
  reader?.close();
  reader = undefined;
  for (const db of opened.splice(0)) await db.destroy().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

test('a transaction is visible once committed, and told done only after the WAL is flushed', async () => {
  const flushes = new HeldFlushes();
  const db = open(flushes);
  const done = db.transaction().execute((tx) => tx.insertInto('t').values({ id: 1 }).execute());
  await waitUntil('the commit', async () => flushes.started.length === 1);
  assert.deepEqual(committedIds(), [1], 'committed: another connection sees it');
  assert.equal(await settled(done), false, 'not told done while the flush runs');
  // The file flushed is the database's WAL.
  const [flush] = flushes.started;
  assert.equal((await flush!.file.stat()).ino, statSync(`${file}-wal`).ino);
  flush!.release();
  await done;
});

test('a write outside a transaction is told done only after the WAL is flushed', async () => {
  const flushes = new HeldFlushes();
  const db = open(flushes);
  const done = db.insertInto('t').values({ id: 1 }).execute();
  await waitUntil('the commit', async () => flushes.started.length === 1);
  assert.deepEqual(committedIds(), [1]);
  assert.equal(await settled(done), false);
  flushes.started[0]!.release();
  await done;
});

test('commits made while a flush runs wait for the next flush, which they share', async () => {
  const flushes = new HeldFlushes();
  const db = open(flushes);
  const first = db.transaction().execute((tx) => tx.insertInto('t').values({ id: 1 }).execute());
  await waitUntil('the first flush', async () => flushes.started.length === 1);
  // Two more commits while the first flush runs: it may have begun before their writes.
  const later = [2, 3].map((id) =>
    db.transaction().execute((tx) => tx.insertInto('t').values({ id }).execute()),
  );
  await waitUntil('both committed', async () => committedIds().length === 3);
  flushes.started[0]!.release();
  await first;
  await waitUntil('the second flush', async () => flushes.started.length === 2);
  for (const commit of later)
    assert.equal(await settled(commit), false, 'not told done by a flush that began before it');
  flushes.started[1]!.release();
  await Promise.all(later);
  assert.equal(flushes.started.length, 2, 'one flush for both');
});

test('a flush that fails fails its commits, and the store refuses everything after (a 503, not a 500)', async () => {
  const flushes = new HeldFlushes();
  const db = open(flushes);
  const done = db.transaction().execute((tx) => tx.insertInto('t').values({ id: 1 }).execute());
  await waitUntil('the flush', async () => flushes.started.length === 1);
  // A second commit while the flush runs: it waits for the next flush, which never comes.
  const queued = db.transaction().execute((tx) => tx.insertInto('t').values({ id: 2 }).execute());
  await waitUntil('the second commit', async () => committedIds().length === 2);
  flushes.started[0]!.fail(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  for (const commit of [done, queued]) {
    const err = await commit.then(
      () => assert.fail('told done after a failed flush'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WalNotDurable, String(err));
    assert.equal(isStoreUnavailable(err), true);
  }
  await assert.rejects(
    db.transaction().execute((tx) => tx.insertInto('t').values({ id: 3 }).execute()),
    WalNotDurable,
  );
  await assert.rejects(db.insertInto('t').values({ id: 4 }).execute(), WalNotDurable);
  await assert.rejects(sql`select 1`.execute(db), WalNotDurable, 'the readiness probe fails');
  assert.equal(flushes.started.length, 1, 'nothing was written, nothing flushed');
  assert.deepEqual(committedIds(), [1, 2]);
});

test('an in-memory database has nothing to flush', async () => {
  const flushes = new HeldFlushes();
  const db = new Kysely<Db>({ dialect: createNodeSqliteDialect(':memory:', 5000, flushes.sync) });
  opened.push(db);
  await sql`create table t (id integer primary key)`.execute(db);
  await db.transaction().execute((tx) => tx.insertInto('t').values({ id: 1 }).execute());
  assert.equal(flushes.started.length, 0);
});
