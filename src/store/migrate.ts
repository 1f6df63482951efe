import type { Kysely } from 'kysely';
import { type Migration, type MigrationProvider, type MigrationResultSet, Migrator } from 'kysely/migration';
import * as m001 from './migrations/001-initial.ts';
import * as m002 from './migrations/002-services-status-index.ts';
import * as m004 from './migrations/004-job-step-marker.ts';

/** Numbered migrations, in order. Never edit a released one; add the next number. */
const MIGRATIONS: Record<string, Migration> = {
  '001-initial': m001,
  '002-services-status-index': m002,
  '004-job-step-marker': m004,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/**
 * Brings the schema up to date. Kysely takes a lock for the run (an advisory lock on
 * PostgreSQL, the write lock on SQLite), so several processes may start at once.
 */
export async function migrateToLatest(db: Kysely<unknown>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed`, { cause: result.error });
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
