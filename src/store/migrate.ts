import { type Kysely, sql } from 'kysely';
import { type Migration, type MigrationProvider, type MigrationResultSet, Migrator } from 'kysely/migration';
import { dialectOf } from './dialect-of.ts';
import * as m001 from './migrations/001-initial.ts';
import * as m002 from './migrations/002-services-status-index.ts';
import * as m003 from './migrations/003-job-step-marker.ts';
import * as m004 from './migrations/004-retention-indexes.ts';
import * as m005 from './migrations/005-job-from-state.ts';
import * as m006 from './migrations/006-events-webhooks.ts';
import * as m007 from './migrations/007-quotas-usage.ts';
import * as m008 from './migrations/008-operators-audit.ts';
import * as m009 from './migrations/009-host-state.ts';
import * as m010 from './migrations/010-console-sessions.ts';
import * as m011 from './migrations/011-reconciler-leases.ts';
import * as m012 from './migrations/012-password-applies.ts';
import * as m013 from './migrations/013-job-queue-order.ts';
import * as m014 from './migrations/014-events-seq-at-commit.ts';
import * as m015 from './migrations/015-job-notifications.ts';
import * as m016 from './migrations/016-job-retry.ts';
import * as m017 from './migrations/017-service-error.ts';
import * as m018 from './migrations/018-host-records.ts';
import * as m019 from './migrations/019-backup-chains.ts';
import * as m020 from './migrations/020-self-service.ts';
import * as m021 from './migrations/021-ip-pools.ts';
import * as m022 from './migrations/022-rdns.ts';
import * as m023 from './migrations/023-traffic.ts';
import * as m024 from './migrations/024-operator-roles.ts';
import * as m025 from './migrations/025-two-factor.ts';
import * as m026 from './migrations/026-audit-actors.ts';
import * as m027 from './migrations/027-notifications.ts';
import * as m028 from './migrations/028-catalog-admin.ts';
import * as m029 from './migrations/029-service-search.ts';
import * as m030 from './migrations/030-billing-id.ts';
import * as m031 from './migrations/031-domain-search-pending.ts';
import * as m032 from './migrations/032-event-locks-in-order.ts';
import * as m033 from './migrations/033-vms-migrating-to.ts';
import * as m034 from './migrations/034-libvirt-leftovers.ts';
import * as m035 from './migrations/035-console-session-ends.ts';
import * as m036 from './migrations/036-libvirt-vm-macs.ts';
import * as m037 from './migrations/037-libvirt-vm-reached.ts';
import * as m038 from './migrations/038-room-claims.ts';
import * as m039 from './migrations/039-sim-disk-pauses.ts';
import * as m040 from './migrations/040-sim-start-with-host.ts';
import { runGivingWay } from './postgres-migrations.ts';

/** Numbered migrations, in order. Never edit a released one; add the next number. */
const MIGRATIONS: Record<string, Migration> = {
  '001-initial': m001,
  '002-services-status-index': m002,
  '003-job-step-marker': m003,
  '004-retention-indexes': m004,
  '005-job-from-state': m005,
  '006-events-webhooks': m006,
  '007-quotas-usage': m007,
  '008-operators-audit': m008,
  '009-host-state': m009,
  '010-console-sessions': m010,
  '011-reconciler-leases': m011,
  '012-password-applies': m012,
  '013-job-queue-order': m013,
  '014-events-seq-at-commit': m014,
  '015-job-notifications': m015,
  '016-job-retry': m016,
  '017-service-error': m017,
  '018-host-records': m018,
  '019-backup-chains': m019,
  '020-self-service': m020,
  '021-ip-pools': m021,
  '022-rdns': m022,
  '023-traffic': m023,
  '024-operator-roles': m024,
  '025-two-factor': m025,
  '026-audit-actors': m026,
  '027-notifications': m027,
  '028-catalog-admin': m028,
  '029-service-search': m029,
  '030-billing-id': m030,
  '031-domain-search-pending': m031,
  '032-event-locks-in-order': m032,
  '033-vms-migrating-to': m033,
  '034-libvirt-leftovers': m034,
  '035-console-session-ends': m035,
  '036-libvirt-vm-macs': m036,
  '037-libvirt-vm-reached': m037,
  '038-room-claims': m038,
  '039-sim-disk-pauses': m039,
  '040-sim-start-with-host': m040,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/**
 * Brings the schema up to date. The run holds a lock (PostgreSQL: Kysely's advisory lock;
 * SQLite: one BEGIN IMMEDIATE transaction around every pending migration, node-sqlite.ts), so
 * several processes may start at once: the others wait, then find nothing left to do.
 *
 * A store a newer version has migrated further (every migration this version knows is done, and
 * the others are all newer than this version's newest) is used as it is: during a rolling upgrade
 * a process of the old version starts (or restarts) beside the new ones, and each migration is
 * written to be compatible with the version before it (docs/deploy.md, "Upgrades").
 * `migrationsAhead` names them.
 */
export async function migrateToLatest(db: Kysely<unknown>): Promise<string[]> {
  // Up to date (every start but the first after an upgrade): no lock taken, so a start never
  // waits behind a running server's writes.
  const done = await doneMigrations(db);
  if (done && pendingOf(done).length === 0 && aheadOf(done).every(isNewerThanKnown)) return [];
  return run(db, (m) => m.migrateToLatest());
}

/** The migrations this version knows that the store has not done (a new store: all of them). */
export async function pendingMigrations<DB>(db: Kysely<DB>): Promise<string[]> {
  const done = await doneMigrations(db);
  return done ? pendingOf(done) : Object.keys(MIGRATIONS);
}

/** The migrations the store has done that this version does not know: a newer version's. */
export async function migrationsAhead<DB>(db: Kysely<DB>): Promise<string[]> {
  const done = await doneMigrations(db);
  return done ? aheadOf(done) : [];
}

const pendingOf = (done: ReadonlySet<string>) => Object.keys(MIGRATIONS).filter((name) => !done.has(name));
const aheadOf = (done: ReadonlySet<string>) => [...done].filter((name) => !(name in MIGRATIONS)).sort();
const isNewerThanKnown = (name: string) => Object.keys(MIGRATIONS).every((known) => known < name);

/** Applies the migrations up to `name` and no further: tests of a migration start from the one before. */
export async function migrateTo(db: Kysely<unknown>, name: string): Promise<string[]> {
  return run(db, (m) => m.migrateTo(name));
}

async function run(
  db: Kysely<unknown>,
  how: (migrator: Migrator) => Promise<MigrationResultSet>,
): Promise<string[]> {
  const result =
    dialectOf(db) === 'postgres'
      ? await runGivingWay(db, (conn) => how(migratorOn(conn)))
      : await how(migratorOn(db));
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error');
    // No failed migration: the run itself could not start (no connection, no lock, no table).
    const what = failed ? `migration ${failed.migrationName} failed` : 'the migrations could not run';
    throw new Error(what, { cause: result.error });
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

function migratorOn(db: Kysely<unknown>): Migrator {
  return new Migrator({
    db,
    provider,
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
  });
}

/** The migrations the store records as done; undefined for a new store (no record yet). */
async function doneMigrations<DB>(db: Kysely<DB>): Promise<Set<string> | undefined> {
  try {
    const rows = await sql<{ name: string }>`select name from schema_migrations`.execute(db);
    return new Set(rows.rows.map((r) => r.name));
  } catch {
    return undefined; // a new store: the migrator creates the table
  }
}
