/**
 * Integration tests run once per store. `npm test` starts a throwaway PostgreSQL and passes
 * its admin URL as VRP_TEST_PG_URL; without it (a single test file run by hand) only SQLite runs.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { createStore, type Store } from '../../src/store/database.ts';
import { migrateTo } from '../../src/store/migrate.ts';

export type StoreKind = 'sqlite' | 'postgres';

export function testStores(): StoreKind[] {
  return process.env['VRP_TEST_PG_URL'] ? ['sqlite', 'postgres'] : ['sqlite'];
}

/** A new, empty PostgreSQL database for one test app; `drop` removes it. */
export async function createPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = process.env['VRP_TEST_PG_URL'];
  if (!admin) throw new Error('VRP_TEST_PG_URL is not set: run the suite with npm test');
  const name = `vrp_t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client(admin);
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client(admin);
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * A fresh store of `kind` migrated up to `migration` and no further, for the tests of a later
 * migration over rows of the earlier schema; `env` names it to a `vrp` command (its data dir,
 * and its PostgreSQL database); `done` closes and removes it.
 */
export async function storeAtMigration(
  kind: StoreKind,
  migration: string,
): Promise<{ store: Store; env: Record<string, string>; done(): Promise<void> }> {
  const pgDb = kind === 'postgres' ? await createPgDatabase() : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'vrp-migration-'));
  const store = createStore({ databaseUrl: pgDb?.url, dataDir: dir });
  await migrateTo(store.db as Kysely<unknown>, migration);
  return {
    store,
    env: { VRP_DATA_DIR: dir, ...(pgDb ? { VRP_DATABASE_URL: pgDb.url } : {}) },
    async done() {
      await store.close();
      await pgDb?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
