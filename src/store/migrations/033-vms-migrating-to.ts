import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * The VMs a migration is bringing to a host, by that host: an evacuation reads them at each pass
 * (a server still arriving keeps it open, src/store/repos/evacuations.ts), and so does a host's
 * removal. Only the VMs being moved have a destination, so the index holds those alone.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['sim_vms', 'libvirt_vms']) {
    await db.schema
      .createIndex(`${table}_migrating_to`)
      .on(table)
      .column('migrating_to')
      .where((eb) => eb('migrating_to', 'is not', null))
      .execute();
  }
}
