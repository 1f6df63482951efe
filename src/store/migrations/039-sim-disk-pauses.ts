import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * The simulated hypervisor's full storage, as libvirt's: `sim_vms.disk_error` is why a running
 * VM is paused on a failed write to its disk (`no_space`, `io_error`; NULL: not paused), and
 * `sim_storage_full` the simulated hosts whose storage has no room (the simulated hypervisor's
 * outside, outside.storageFull). Rows stored before this are not paused, on hosts with room.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sim_vms').addColumn('disk_error', 'text').execute();
  await db.schema
    .createTable('sim_storage_full')
    .addColumn('host_id', 'text', (c) => c.primaryKey())
    .addColumn('since', 'bigint', (c) => c.notNull())
    .execute();
}
