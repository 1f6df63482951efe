import { join } from 'node:path';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { ensureDataDir } from '../data-dir.ts';
import { learnColumnTypes } from './column-types.ts';
import type { DialectName } from './dialect-of.ts';
import { type HotReads, pgHotReads, sqliteHotReads } from './hot-reads.ts';
import { type JobNotifications, type ListenerLog, listenForQueuedJobs } from './job-notifications.ts';
import { migrateToLatest } from './migrate.ts';
import { createNodeSqliteDialect } from './node-sqlite.ts';
import { describeStoreLocation, expectedOpenCause, StoreOpenError } from './open-failure.ts';
import { namedStatementsPool } from './pg-named.ts';
import type { Database } from './schema.ts';

/** What differs between the databases, as data: callers ask, they do not branch on names. */
export interface DialectFeatures {
  /** `SELECT ... FOR UPDATE SKIP LOCKED` is available (PostgreSQL). */
  readonly skipLocked: boolean;
  /**
   * `SELECT ... FOR UPDATE` locks rows (PostgreSQL). SQLite has no row locks and needs none:
   * its write transactions (BEGIN IMMEDIATE, node-sqlite.ts) already run one at a time.
   */
  readonly rowLocks: boolean;
  /**
   * INSERT inside WITH (PostgreSQL): rows of several tables go in one statement, atomic without
   * a transaction of its own (insert-row.ts).
   */
  readonly writableCtes: boolean;
}

export interface Store {
  readonly db: Kysely<Database>;
  readonly dialect: DialectName;
  readonly features: DialectFeatures;
  /** Where it is, for messages: `PostgreSQL host:port/database` or `SQLite <file>`; no password. */
  readonly location: string;
  /** The hottest reads, prepared once (hot-reads.ts). */
  readonly reads: HotReads;
  /**
   * Where the database can tell this process that other processes queued jobs (PostgreSQL:
   * job-notifications.ts): calls `onQueued` for each such commit until closed. Undefined on
   * SQLite, whose processes poll.
   */
  readonly listenForQueuedJobs?: (onQueued: () => void, log: ListenerLog) => JobNotifications;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly poolSize?: number;
}

// int8 (bigint, counts) and numeric come back from pg as strings; our values fit in a double.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/** Opens the store named by the settings and brings its schema up to date. */
export async function openStore(options: StoreOptions): Promise<Store> {
  return (await openAndMigrate(options)).store;
}

/**
 * Opens the store and brings its schema up to date, naming the migrations it applied. A store
 * out of reach (refused, unknown database, bad password, timeout) fails with a StoreOpenError
 * whose one-line message names the cause and the place; anything else keeps its stack.
 */
export async function openAndMigrate(options: StoreOptions): Promise<{ store: Store; applied: string[] }> {
  let store: Store | undefined;
  try {
    store = createStore(options);
    const applied = await migrateToLatest(store.db as Kysely<unknown>);
    if (store.dialect === 'postgres') await learnColumnTypes(store.db);
    return { store, applied };
  } catch (err) {
    await store?.close();
    const cause = expectedOpenCause(err);
    if (cause === undefined) throw err;
    throw new StoreOpenError(`cannot open the store (${storeLocation(options)}): ${cause}`, { cause: err });
  }
}

function sqliteFile(options: StoreOptions): string {
  return join(options.dataDir, 'vrp.sqlite');
}

function storeLocation(options: StoreOptions): string {
  return describeStoreLocation(options.databaseUrl, sqliteFile(options));
}

/**
 * How long a pooled PostgreSQL connection may sit idle before it is closed. A connection's named
 * statements (pg-named.ts) are planned afresh on each run until PostgreSQL keeps a plan for
 * them (their first five runs on that connection), and that planning was over a third of
 * PostgreSQL's CPU for a server's first services (bench/FINDINGS.md, "A server's first
 * services"): pg's default of 10 s threw it away whenever a pause in the load, or a connection
 * the pool did not need for a few seconds, left one idle. A minute keeps it across such pauses,
 * and still closes an idle connection before the usual idle limits of firewalls and NAT (5
 * minutes and more).
 */
export const PG_IDLE_CLOSE_MS = 60_000;

/** Opens the store without migrating it. */
export function createStore(options: StoreOptions): Store {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: PG_IDLE_CLOSE_MS,
    });
    // An idle client that loses its connection emits 'error'; without a listener that would crash the process.
    pool.on('error', () => {});
    // The backends of this process's connections: their notifications are this process's own.
    const backends = new Set<number>();
    const backendOf = (client: pg.PoolClient) => (client as pg.PoolClient & { processID: number }).processID;
    pool.on('connect', (client) => {
      backends.add(backendOf(client));
      // So does a client that is checked out (the pool listens to idle ones only), for instance
      // one holding a transaction between two statements when PostgreSQL restarts: the error
      // reaches whoever uses it (its statement in flight, or its next one, fails), not the process.
      client.on('error', () => {});
    });
    pool.on('remove', (client) => backends.delete(backendOf(client)));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: namedStatementsPool(pool) }) });
    return {
      db,
      dialect: 'postgres',
      features: { skipLocked: true, rowLocks: true, writableCtes: true },
      location: storeLocation(options),
      reads: pgHotReads(pool),
      listenForQueuedJobs: (onQueued, log) =>
        listenForQueuedJobs(options.databaseUrl as string, backends, onQueued, log),
      ping: async () => {
        await sql`select 1`.execute(db);
      },
      close: () => db.destroy(),
    };
  }
  ensureDataDir(options.dataDir);
  const file = sqliteFile(options);
  const db = new Kysely<Database>({ dialect: createNodeSqliteDialect(file) });
  const reads = sqliteHotReads(file);
  return {
    db,
    dialect: 'sqlite',
    features: { skipLocked: false, rowLocks: false, writableCtes: false },
    location: storeLocation(options),
    reads,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: async () => {
      reads.close();
      await db.destroy();
    },
  };
}
