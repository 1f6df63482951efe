import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * `reconciler_leases`: one row per hypervisor host, claimed by the process whose power-state
 * reconciler (jobs/reconciler.ts) compares that host with the store, so that with several
 * worker processes each host is reconciled by one of them at a time. A claim is a conditional
 * update on an expired `locked_until` (real time, epoch ms), the same on SQLite and PostgreSQL;
 * a process that dies mid-pass leaves a lease that simply expires.
 *
 * `services_host_status` (host_id, status): a pass reads the services of one host in the power
 * statuses, an index range rather than a scan of every service.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('reconciler_leases')
    .addColumn('host_id', 'text', (c) => c.primaryKey())
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('services_host_status').on('services').columns(['host_id', 'status']).execute();
}
