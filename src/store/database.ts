import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { type HotReads, kyselyHotReads, sqliteHotReads } from './hot-reads.ts';
import { migrateToLatest } from './migrate.ts';
import { createNodeSqliteDialect } from './node-sqlite.ts';
import type { Database } from './schema.ts';

export type DialectName = 'sqlite' | 'postgres';

/** What differs between the databases, as data: callers ask, they do not branch on names. */
export interface DialectFeatures {
  /** `SELECT ... FOR UPDATE SKIP LOCKED` is available (PostgreSQL). */
  readonly skipLocked: boolean;
}

export interface Store {
  readonly db: Kysely<Database>;
  readonly dialect: DialectName;
  readonly features: DialectFeatures;
  /** The hottest reads, prepared once (hot-reads.ts). */
  readonly reads: HotReads;
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
  const store = createStore(options);
  try {
    await migrateToLatest(store.db as Kysely<unknown>);
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

/** Opens the store without migrating it. */
export function createStore(options: StoreOptions): Store {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 5000,
    });
    // An idle client that loses its connection emits 'error'; without a listener that would crash the process.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      dialect: 'postgres',
      features: { skipLocked: true },
      reads: kyselyHotReads(db),
      ping: async () => {
        await sql`select 1`.execute(db);
      },
      close: () => db.destroy(),
    };
  }
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const file = join(options.dataDir, 'vrp.sqlite');
  const db = new Kysely<Database>({ dialect: createNodeSqliteDialect(file) });
  const reads = sqliteHotReads(file);
  return {
    db,
    dialect: 'sqlite',
    features: { skipLocked: false },
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
