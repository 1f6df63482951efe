/**
 * Kysely over Node's built-in `node:sqlite` (no native addon to compile). Kysely's own
 * SqliteDialect wants a better-sqlite3-shaped database; this adapts `DatabaseSync` to it and
 * caches prepared statements. Transactions go through group commit (sqlite-group-commit.ts),
 * opened with BEGIN IMMEDIATE so that several processes on one file wait on the busy timeout
 * instead of failing to upgrade a lock.
 */
import { resolve } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { SqliteAdapter, type SqliteDatabase, SqliteDialect, type SqliteStatement } from 'kysely';
import { GroupCommitSqliteDriver } from './sqlite-group-commit.ts';
import { rowReader } from './sqlite-rows.ts';
import { type SyncFile, WalSync } from './wal-sync.ts';

const STATEMENT_CACHE_SIZE = 500;

class CachedDatabase implements SqliteDatabase {
  readonly #db: DatabaseSync;
  readonly #cache = new Map<string, SqliteStatement>();

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  prepare(sql: string): SqliteStatement {
    const hit = this.#cache.get(sql);
    if (hit) return hit;
    const stmt: StatementSync = this.#db.prepare(sql);
    // Kysely hands over its parameters untyped; node:sqlite binds what SQLite can hold.
    const bind = (params: readonly unknown[]) => params as SQLInputValue[];
    const rows = rowReader(stmt);
    const wrapped: SqliteStatement = {
      reader: rows.returnsRows,
      all: (params) => rows.all(bind(params)),
      run: (params) => stmt.run(...bind(params)),
      iterate: (params) => rows.iterate(bind(params)),
    };
    if (this.#cache.size >= STATEMENT_CACHE_SIZE) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    this.#cache.set(sql, wrapped);
    return wrapped;
  }

  close(): void {
    this.#cache.clear();
    this.#db.close();
  }
}

/**
 * SQLite does run DDL in transactions. Saying so makes Kysely's migrator run all pending
 * migrations in one (BEGIN IMMEDIATE) transaction, which is the lock its SQLite adapter lacks:
 * processes that start at once on a fresh file wait for the first to migrate, then find nothing
 * left to do, instead of creating the same tables twice.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
  /**
   * There is one connection, but the driver hands it out in turn itself (sqlite-group-commit.ts)
   * in place of Kysely's lock, which cannot tell whether anyone waits.
   */
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

class NodeSqliteDialect extends SqliteDialect {
  readonly #file: string;
  readonly #raw: DatabaseSync;
  readonly #database: SqliteDatabase;
  readonly #wal: WalSync | undefined;
  readonly #openReader: (() => SqliteDatabase) | undefined;
  constructor(
    file: string,
    raw: DatabaseSync,
    database: SqliteDatabase,
    wal: WalSync | undefined,
    openReader: (() => SqliteDatabase) | undefined,
  ) {
    super({ database });
    this.#file = file;
    this.#raw = raw;
    this.#database = database;
    this.#wal = wal;
    this.#openReader = openReader;
  }
  override createDriver() {
    return new GroupCommitSqliteDriver(this.#file, this.#raw, this.#database, this.#wal, this.#openReader);
  }
  override createAdapter() {
    return new TransactionalDdlSqliteAdapter();
  }
}

/**
 * Opens (creating if needed) a SQLite file with WAL, foreign keys and a busy timeout. Commits are
 * durable: each is told done once the WAL has been flushed to the disk after it, off the event
 * loop's thread (wal-sync.ts; `syncWal` flushes the file, fdatasync unless a test says otherwise).
 */
export function createNodeSqliteDialect(
  file: string,
  busyTimeoutMs = 5000,
  syncWal?: SyncFile,
): SqliteDialect {
  const db = new DatabaseSync(file);
  // First, so that every statement below (switching a new file to WAL takes a lock too) waits
  // for another process that is opening the same file instead of failing at once.
  db.exec(`pragma busy_timeout = ${Math.floor(busyTimeoutMs)}`);
  // An in-memory database stays in its own mode, with nothing to flush.
  const wal = db.prepare('pragma journal_mode = wal').get()?.['journal_mode'] === 'wal';
  // The COMMIT does not wait for the disk; WalSync does, off the thread (wal-sync.ts).
  db.exec(`pragma synchronous = normal`);
  db.exec(`pragma foreign_keys = on`);
  // The journals of savepoints (every transaction has one, sqlite-group-commit.ts) and sorts'
  // temporary tables in memory rather than in temporary files.
  db.exec(`pragma temp_store = memory`);
  // Checkpoint the WAL every ~40 MB instead of every 4 MB: a page written many times between
  // checkpoints is copied to the database once, which took a third of the job pipeline's
  // write time at 1,000 services/s (bench/RESULTS.md). The WAL file is cut back after.
  db.exec(`pragma wal_autocheckpoint = 10000`);
  db.exec(`pragma journal_size_limit = ${64 * 1024 * 1024}`);
  const walSync = wal ? new WalSync(`${resolve(file)}-wal`, syncWal) : undefined;
  // The selects made while a group of transactions is open read what is committed here
  // (sqlite-group-commit.ts); opened at the first. An in-memory database has no second view.
  const openReader = wal
    ? () => {
        const reader = new DatabaseSync(file, { readOnly: true });
        reader.exec(`pragma busy_timeout = ${Math.floor(busyTimeoutMs)}`);
        reader.exec(`pragma temp_store = memory`);
        return new CachedDatabase(reader);
      }
    : undefined;
  return new NodeSqliteDialect(file, db, new CachedDatabase(db), walSync, openReader);
}
