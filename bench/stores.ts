/**
 * The stores the bench runs on: SQLite (a file in the bench's data dir) and PostgreSQL (a
 * database on a throwaway server, as the tests start one: scripts/postgres.ts, durable commits,
 * as in production). The scenarios see only this interface.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { type PostgresServer, startPostgres } from '../scripts/postgres.ts';
import { resetIds, type SeedOwner, seedServices, seedServicesPg } from './seed.ts';

export type StoreKind = 'sqlite' | 'postgres';

export interface BenchStore {
  readonly kind: StoreKind;
  /** The server's settings for this store (its data dir; its database URL on PostgreSQL). */
  readonly env: Record<string, string>;
  /** What openStore takes. */
  readonly options: { readonly databaseUrl: string | undefined; readonly dataDir: string };
  /** Adds `n` running services of `owner` (ids appended to `idsFile`); returns the ms it took. */
  seed(owner: SeedOwner, n: number, idsFile: string, intervals?: { readonly since: number }): Promise<number>;
  /** One number from a `select count(*) as n ...` query. */
  count(sql: string, params?: readonly string[]): Promise<number>;
  /** Rows of a query (`?` placeholders, numbered for PostgreSQL). */
  rows<T>(sql: string, params?: readonly string[]): Promise<T[]>;
  /**
   * A new store holding what this one holds now (no server may be using this one). The data
   * dir's secret key is not copied: a server started on the copy needs the original's.
   */
  copy(name: string): Promise<BenchStore>;
  close(): Promise<void>;
  /** PostgreSQL: the CPU time (user, system; µs) its server's processes have used so far. */
  readonly databaseCpu?: () => { user: number; system: number };
}

/** Where the bench's stores live: a data dir, and a PostgreSQL server once one is needed. */
export function benchStores(dataDir: string) {
  let server: PostgresServer | undefined;
  const pgServer = async () => {
    server ??= await startPostgres({ durable: true });
    return server;
  };

  function sqlite(dir: string): BenchStore {
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'vrp.sqlite');
    const read = <T>(fn: (db: DatabaseSync) => T): T => {
      const db = new DatabaseSync(file, { readOnly: true });
      try {
        return fn(db);
      } finally {
        db.close();
      }
    };
    return {
      kind: 'sqlite',
      env: { VRP_DATA_DIR: dir },
      options: { databaseUrl: undefined, dataDir: dir },
      seed: async (owner, n, idsFile, intervals) => seedServices(file, owner, n, idsFile, intervals),
      count: async (sql, params = []) =>
        read((db) => Number((db.prepare(sql).get(...params) as { n: number }).n)),
      rows: async <T>(sql: string, params: readonly string[] = []) =>
        read((db) => db.prepare(sql).all(...params) as T[]),
      async copy(name) {
        const to = join(dataDir, name);
        mkdirSync(to, { recursive: true });
        copyFileSync(file, join(to, 'vrp.sqlite'));
        return sqlite(to);
      },
      close: async () => {},
    };
  }

  async function postgres(name: string, template?: string): Promise<BenchStore> {
    const s = await pgServer();
    const admin = new pg.Client(s.url);
    await admin.connect();
    try {
      await admin.query(`create database ${name}${template ? ` template ${template}` : ''}`);
    } finally {
      await admin.end();
    }
    const url = new URL(s.url);
    url.pathname = `/${name}`;
    const dir = join(dataDir, name);
    mkdirSync(dir, { recursive: true });
    // Opened when first needed, and closed for a copy (CREATE DATABASE ... TEMPLATE needs the
    // source without connections).
    let pool: pg.Pool | undefined;
    const query = (sql: string, params: readonly string[]) => {
      pool ??= new pg.Pool({ connectionString: url.toString(), max: 2 });
      let i = 0;
      return pool.query(
        sql.replace(/\?/g, () => `$${++i}`),
        [...params],
      );
    };
    const end = async () => {
      const p = pool;
      pool = undefined;
      await p?.end();
    };
    return {
      kind: 'postgres',
      env: { VRP_DATA_DIR: dir, VRP_DATABASE_URL: url.toString() },
      options: { databaseUrl: url.toString(), dataDir: dir },
      databaseCpu: () => s.cpu(),
      seed: (owner, n, idsFile, intervals) => seedServicesPg(url.toString(), owner, n, idsFile, intervals),
      count: async (sql, params = []) => Number((await query(sql, params)).rows[0].n),
      rows: async <T>(sql: string, params: readonly string[] = []) => (await query(sql, params)).rows as T[],
      async copy(to) {
        await end();
        return postgres(to, name);
      },
      close: end,
    };
  }

  return {
    /** A fresh, empty store `name` (not migrated: openStore migrates it). */
    create: (kind: StoreKind, name: string): Promise<BenchStore> =>
      kind === 'sqlite' ? Promise.resolve(sqlite(join(dataDir, name))) : postgres(name),
    stop(): void {
      server?.stop();
      server = undefined;
    },
  };
}

export { resetIds };
