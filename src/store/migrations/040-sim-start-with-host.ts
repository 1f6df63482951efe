import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * `sim_vms.start_with_host`: 1 when the simulated VM's host starts it at its boot (libvirt's
 * autostart mark; the simulated hypervisor's outside.hostReboot), 0 when not. The driver sets it
 * when it leaves a VM running and clears it when it stops one; rows stored before this are marked
 * when they run their own system, as the reconciler's passes would mark them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('sim_vms')
    .addColumn('start_with_host', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // Not one in rescue: its rescue system runs as a live definition, which a boot does not start.
  await sql`update sim_vms set start_with_host = 1 where power = 'running' and rescue_password_hash is null`.execute(
    db,
  );
}
