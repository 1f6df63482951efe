import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * `libvirt_vms.reached_at`: when a create first had an answer from the VM's host about it (ms),
 * written before the create puts anything there; NULL while none has. A create that gives up
 * (its last attempt) and finds the host silent may give the VM's addresses and room back only
 * while this is NULL: the host then holds nothing of the VM. It was known only to the process
 * that made the attempt, so after a restart (or with the attempt in another process) a silent
 * host holding a defined, perhaps running, domain was taken for an empty one, and its addresses
 * went to the next VM. Rows stored before this have NULL, as before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('libvirt_vms').addColumn('reached_at', 'bigint').execute();
}
