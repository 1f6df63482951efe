import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * `libvirt_leftovers`: a VM's copy a host still holds though the VM is not there (the store
 * names another host): the source's copy after a migration whose clean-up failed (its disk, its
 * seed with the password in clear, its console log), or what a failed migration left on a
 * destination that did not answer. Each reconciler pass removes those of the hosts it reconciles
 * (src/jobs/reconciler.ts), and a create or migration that brings the VM back to such a host
 * removes its old copy there first; whoever removes one holds the row (`claimed_by`, until
 * `claimed_until`) meanwhile. Keyed by host first: a pass reads one host's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('libvirt_leftovers')
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('vm_id', 'text', (c) => c.notNull())
    .addColumn('since', 'bigint', (c) => c.notNull())
    .addColumn('claimed_until', 'bigint')
    .addColumn('claimed_by', 'text')
    .addPrimaryKeyConstraint('libvirt_leftovers_pk', ['host_id', 'vm_id'])
    .execute();
}
