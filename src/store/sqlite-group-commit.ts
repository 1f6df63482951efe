/**
 * Group commit of SQLite transactions: the write transactions of one process that wait for the
 * connection while another runs share one commit. SQLite has one writer at a time, so they
 * would have run one after another anyway; each then paid its own commit, which writes every
 * page it changed to the WAL: the same pages (a service's row, the job indexes, the event
 * feed) again for each transaction (~120 µs a commit under the job pipeline's load,
 * bench/FINDINGS.md).
 *
 * How: the connection is handed from one user to the next in arrival order. A transaction that
 * finds no group open begins one (BEGIN IMMEDIATE); each transaction runs inside a savepoint of
 * its own, released at its commit and rolled back to at its rollback, so one transaction's
 * failure undoes only its own writes. At the end of a transaction, if another transaction waits
 * for the connection (and the group is under its bounds), the commit is left to the group's
 * last one; otherwise the group commits soon: after a turn of the event loop while such waits
 * find company, else as soon as the promise callbacks already ready have run (#commitSoon).
 *
 * What callers see is unchanged: a transaction's `execute` resolves only after the COMMIT that
 * holds its writes and the flush of the WAL after it (wal-sync.ts), and rejects if either fails,
 * so nothing is reported done that a crash or a power cut could lose. A statement outside a
 * transaction (Kysely's plain queries) is one more member of the group when it is an insert,
 * update or delete (it opens a group if none is open): it needs no savepoint, as SQLite undoes a
 * failed statement's own changes alone, and it is told done as a transaction is. A select made
 * while a group is open runs on a read-only connection to the same file: it sees what is
 * committed, never the open group's writes (whose callers have not been told done), and it
 * neither waits for the group nor ends it early. A select with no group open runs on the main
 * connection at once, as before; any other statement (raw SQL, such as the readiness probe's
 * `select 1`, and DDL) commits the group first and, unless it is a built select, is told done
 * after a flush of the WAL. If SQLite itself rolls back the whole group (it may, on errors such
 * as a full disk), every transaction of the group that had ended fails with that error, as if
 * its own commit had failed.
 *
 * What the code that uses the store must keep to (it does; the tests check what they can):
 * - transactions are `db.transaction().execute(callback)`; neither `startTransaction()` nor a
 *   transaction inside `db.connection()`, which would be told done at their COMMIT statement,
 *   before the group's;
 * - a transaction's callback never waits for another transaction to be told done: that one is
 *   committed with it, so both would wait for ever (as a callback using the outer `db` instead
 *   of its `tx` always did);
 * - no deferred constraint in the SQLite schema: a failure at COMMIT fails the whole group.
 */

import { resolve } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type SqliteDatabase,
  SqliteDriver,
} from 'kysely';
import type { WalSync } from './wal-sync.ts';

/**
 * A group takes no transaction more once it has this many, or once it has been open this long
 * (ms; checked as each transaction ends, so a group lasts that plus its last transaction).
 */
const MAX_MEMBERS = 64;
const MAX_GROUP_MS = 20;

interface Group {
  readonly openedAt: number;
  members: number;
  /** Left open for a turn of the event loop, and no transaction has joined since. */
  waiting: boolean;
  /** Settled once its COMMIT is on the disk (the WAL flushed after it). */
  readonly committed: PromiseWithResolvers<void>;
}

/** Kysely's statements that run inside a group when they come outside a transaction. */
const GROUPED_WRITES = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode']);

/** The error a group's transactions fail with when SQLite rolled the group back on its own. */
export class GroupRolledBack extends Error {
  constructor(cause: unknown) {
    super('SQLite rolled back the group of transactions this one was to be committed with', { cause });
    this.name = 'GroupRolledBack';
  }
}

/**
 * Whether leaving a group open for a turn of the event loop has found company lately: a moving
 * score of the last waits; when it is low, one wait in PROBE_EVERY still tries.
 */
class CompanyScore {
  #score = 1;
  #skipped = 0;
  record(found: boolean): void {
    this.#score = 0.9 * this.#score + (found ? 0.1 : 0);
  }
  worthWaiting(): boolean {
    if (this.#score >= 0.25) return true;
    this.#skipped = (this.#skipped + 1) % PROBE_EVERY;
    return this.#skipped === 0;
  }
}
const PROBE_EVERY = 8;

/** The open drivers of this process, by file. */
const drivers = new Map<string, Set<GroupCommitSqliteDriver>>();

/** Told when this process's writes to a file have committed (by file, resolved). */
const commitListeners = new Map<string, Set<() => void>>();

/**
 * Calls `listener` each time a write of this process to `file` has committed, before the code
 * that made it goes on (the hot reads' snapshot, hot-reads.ts, ends there). Returns the
 * unsubscribe.
 */
export function onCommit(file: string, listener: () => void): () => void {
  const key = resolve(file);
  const set = commitListeners.get(key) ?? new Set();
  commitListeners.set(key, set.add(listener));
  return () => {
    set.delete(listener);
    if (set.size === 0) commitListeners.delete(key);
  };
}

function tellCommitted(file: string): void {
  for (const listener of commitListeners.get(file) ?? []) listener();
}

export class GroupCommitSqliteDriver implements Driver {
  readonly #file: string;
  readonly #raw: DatabaseSync;
  readonly #inner: SqliteDriver;
  #connection: DatabaseConnection | undefined;
  /** The connection is handed over in arrival order; `#busy` while someone holds it. */
  #busy = false;
  readonly #waiting: (() => void)[] = [];
  #group: Group | undefined;
  /** Inside a transaction of the group (between its savepoint and its release or rollback). */
  #inTransaction = false;
  /**
   * The group the holder's transaction ended in: its release waits for the group's commit (and
   * fails with it) if it committed; a refusal (rolled back) is told after the group's end too,
   * as it may rest on what the group's earlier transactions wrote.
   */
  #endedIn: { readonly group: Group; readonly succeeded: boolean } | undefined;
  readonly #company = new CompanyScore();
  /** Flushes the WAL after commits (wal-sync.ts); none when the database is not in WAL mode (in memory). */
  readonly #wal: WalSync | undefined;
  /** The holder made a write outside a transaction: its release waits for the WAL's flush. */
  #plainWrite = false;
  /** Opens the read-only connection for selects made while a group is open (none: in memory). */
  readonly #openReader: (() => SqliteDatabase) | undefined;
  /** Kysely's driver of that connection, and its one connection, once opened. */
  #reader: { readonly driver: SqliteDriver; readonly connection: Promise<DatabaseConnection> } | undefined;

  constructor(
    file: string,
    raw: DatabaseSync,
    database: SqliteDatabase,
    wal: WalSync | undefined,
    openReader?: () => SqliteDatabase,
  ) {
    this.#file = resolve(file);
    this.#raw = raw;
    this.#inner = new SqliteDriver({ database });
    this.#wal = wal;
    this.#openReader = openReader;
  }

  async init(): Promise<void> {
    await this.#inner.init();
    const same = drivers.get(this.#file) ?? new Set();
    drivers.set(this.#file, same.add(this));
    const conn = await this.#inner.acquireConnection();
    this.#connection = {
      executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
        const plain = !this.#inTransaction;
        const kind = query.query.kind;
        if (plain && GROUPED_WRITES.has(kind)) return this.#inGroup(conn, query);
        if (plain && kind === 'SelectQueryNode' && this.#group && this.#openReader)
          return this.#readCommitted<R>(query, this.#openReader);
        this.#beforeStatement();
        const result = await conn.executeQuery<R>(query);
        // A plain write committed as it ran; it is told done once the WAL is flushed (at release).
        if (plain && query.query.kind !== 'SelectQueryNode') {
          tellCommitted(this.#file);
          this.#plainWrite = true;
        }
        return result;
      },
      streamQuery: <R>(query: CompiledQuery, chunkSize: number) => {
        this.#beforeStatement();
        return conn.streamQuery<R>(query, chunkSize);
      },
    };
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#busy) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#busy = true;
    if (!this.#connection) throw new Error('the SQLite driver was not initialized');
    return this.#connection;
  }

  /**
   * A write outside a transaction, run as a member of the open group (or of a new one): it
   * shares the group's commit instead of paying one of its own. One statement is atomic within
   * the group: if it fails, SQLite undoes its own changes only, unless it rolled back the whole
   * group (abandoned then). It is told done as a transaction is, once the group's commit is on
   * the disk.
   */
  async #inGroup<R>(conn: DatabaseConnection, query: CompiledQuery): Promise<QueryResult<R>> {
    this.#refuseIfNotDurable();
    const group = this.#group ?? this.#beginGroup();
    let result: QueryResult<R>;
    try {
      result = await conn.executeQuery<R>(query);
    } catch (err) {
      if (!this.#raw.isTransaction) this.#abandonGroup(new GroupRolledBack(err));
      throw err;
    }
    group.members++;
    this.#endedIn = { group, succeeded: true };
    return result;
  }

  /**
   * A select outside a transaction while a group is open: on the read-only connection, which
   * sees what is committed (WAL gives each statement a snapshot and never waits for the writer).
   * Committing the group first instead cut the groups of the job pipeline short (half its
   * commits; bench/FINDINGS.md), and reading in the group would show writes not yet told done.
   */
  async #readCommitted<R>(query: CompiledQuery, open: () => SqliteDatabase): Promise<QueryResult<R>> {
    this.#refuseIfNotDurable();
    if (!this.#reader) {
      const driver = new SqliteDriver({ database: open() });
      this.#reader = { driver, connection: driver.init().then(() => driver.acquireConnection()) };
    }
    return (await this.#reader.connection).executeQuery<R>(query);
  }

  /** Takes the file's write lock and opens a group. */
  #beginGroup(): Group {
    this.#beforeLock();
    this.#raw.exec('begin immediate');
    const committed = Promise.withResolvers<void>();
    // Settled even when no transaction of the group waits for it.
    committed.promise.catch(() => {});
    this.#group = { openedAt: performance.now(), members: 0, waiting: false, committed };
    return this.#group;
  }

  /** The group a transaction just ended in; none would be a commit without a begin (a bug here). */
  #openGroup(): Group {
    if (!this.#group) throw new Error('no transaction group is open');
    return this.#group;
  }

  /** A statement outside a transaction that does not join the group (#inGroup) commits it first. */
  #beforeStatement(): void {
    if (this.#inTransaction) return;
    this.#refuseIfNotDurable();
    if (this.#group) this.#commitGroup();
    this.#beforeLock();
  }

  /** After a failed flush of the WAL nothing more is written or read here (wal-sync.ts). */
  #refuseIfNotDurable(): void {
    const failed = this.#wal?.failed;
    if (failed) throw failed;
  }

  async beginTransaction(): Promise<void> {
    this.#refuseIfNotDurable();
    if (!this.#group) this.#beginGroup();
    this.#raw.exec('savepoint vrp_tx');
    this.#inTransaction = true;
  }

  async commitTransaction(): Promise<void> {
    this.#raw.exec('release vrp_tx');
    this.#inTransaction = false;
    const group = this.#openGroup();
    group.members++;
    this.#endedIn = { group, succeeded: true };
    if (group.waiting) {
      // Waiting found company.
      this.#company.record(true);
      group.waiting = false;
    }
  }

  async rollbackTransaction(): Promise<void> {
    const group = this.#group;
    if (!this.#raw.isTransaction) {
      // SQLite rolled back the whole group: what its ended transactions wrote is gone.
      this.#inTransaction = false;
      this.#abandonGroup(new GroupRolledBack(new Error('SQLite rolled back the transaction')));
      return;
    }
    const err = this.#undoTransaction();
    if (err) throw err;
    if (group) this.#endedIn = { group, succeeded: false };
  }

  /**
   * Undoes the running transaction's writes (rolls back to its savepoint). If they cannot be
   * undone alone, the whole group goes, never committed with them; returns that error.
   */
  #undoTransaction(): unknown {
    this.#inTransaction = false;
    try {
      this.#raw.exec('rollback to vrp_tx');
      this.#raw.exec('release vrp_tx');
      return undefined;
    } catch (err) {
      this.#abandonGroup(new GroupRolledBack(err));
      return err;
    }
  }

  /** Rolls the open group back; every transaction that had ended in it fails with `error`. */
  #abandonGroup(error: unknown): void {
    const group = this.#group;
    this.#group = undefined;
    try {
      if (this.#raw.isTransaction) this.#raw.exec('rollback');
    } catch {
      // The connection is unusable; its transaction went with it.
    }
    group?.committed.reject(error);
  }

  async releaseConnection(): Promise<void> {
    const ended = this.#endedIn;
    this.#endedIn = undefined;
    const plainWrite = this.#plainWrite;
    this.#plainWrite = false;
    const group = this.#group;
    if (group && !this.#inTransaction) {
      const full = group.members >= MAX_MEMBERS || performance.now() - group.openedAt >= MAX_GROUP_MS;
      if (full) this.#commitGroup();
      else if (this.#waiting.length === 0) this.#commitSoon(group);
    }
    const next = this.#waiting.shift();
    if (next) next();
    else this.#busy = false;
    if (ended?.succeeded) await ended.group.committed.promise;
    else if (ended) await ended.group.committed.promise.catch(() => {});
    if (plainWrite) await this.#wal?.afterWrites();
  }

  /**
   * Before this connection takes the file's write lock: another connection of this process on
   * the same file (tests play two processes with two stores in one) may hold it for a group
   * left open between its transactions. Waiting for it here would wait on this very thread
   * until the busy timeout; it commits first. (Within a transaction of the other's, nothing can
   * be done: that was so before group commit too.)
   */
  #beforeLock(): void {
    for (const other of drivers.get(this.#file) ?? [])
      if (other !== this && other.#group && !other.#inTransaction) other.#commitGroup();
  }

  /**
   * Commits `group` soon, unless it has grown or committed by then: after this turn of the event
   * loop while waiting that long finds company (the job pipeline: other workers' transactions
   * arrive from timers and I/O), else once the promise callbacks that are ready have run (orders
   * at 50 connections, whose next group waits for this one: a turn of the event loop, with every
   * request it reads, only added to their latency).
   */
  #commitSoon(group: Group): void {
    const fire = () => {
      if (this.#group !== group || this.#busy) return;
      if (group.waiting) this.#company.record(false);
      this.#commitGroup();
    };
    if (this.#company.worthWaiting()) {
      group.waiting = true;
      setImmediate(fire);
    } else process.nextTick(fire);
  }

  /** Commits the open group and settles its transactions. */
  #commitGroup(): void {
    const group = this.#openGroup();
    try {
      this.#raw.exec('commit');
    } catch (err) {
      this.#abandonGroup(err);
      return;
    }
    this.#group = undefined;
    // Visible from here on; told done once on the disk.
    tellCommitted(this.#file);
    if (!this.#wal) group.committed.resolve();
    else
      this.#wal.afterWrites().then(
        () => group.committed.resolve(),
        (err: unknown) => group.committed.reject(err),
      );
  }

  async savepoint(...args: Parameters<NonNullable<Driver['savepoint']>>): Promise<void> {
    return this.#inner.savepoint(...args);
  }

  async rollbackToSavepoint(...args: Parameters<NonNullable<Driver['rollbackToSavepoint']>>): Promise<void> {
    return this.#inner.rollbackToSavepoint(...args);
  }

  async releaseSavepoint(...args: Parameters<NonNullable<Driver['releaseSavepoint']>>): Promise<void> {
    return this.#inner.releaseSavepoint(...args);
  }

  async destroy(): Promise<void> {
    if (this.#group) {
      // A transaction still running when the store closes does not commit: only those that ended.
      if (this.#inTransaction) this.#undoTransaction();
      if (this.#group) this.#commitGroup();
    }
    const same = drivers.get(this.#file);
    same?.delete(this);
    if (same?.size === 0) drivers.delete(this.#file);
    await this.#wal?.close();
    await this.#reader?.driver.destroy();
    this.#reader = undefined;
    await this.#inner.destroy();
  }
}
