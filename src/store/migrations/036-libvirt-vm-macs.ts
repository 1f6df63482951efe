import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * `libvirt_vms.mac`: the MAC address of the VM's interface, one no other VM of the store has (a
 * unique index; NULLs do not count). libvirt left alone gives each new interface a random
 * `52:54:00:xx:xx:xx`, 24 random bits chosen without looking at other hosts: two of n VMs on one
 * provider network share one with a probability of about 1 - e^(-n²/2²⁵) (a fleet of 5,000 VMs:
 * about one chance in two), and then both lose packets. A new VM's MAC is given once, from a
 * range libvirt's own never fall in, and written into every definition of the domain (its own,
 * its rescue system's), so it also stays the same across a reinstall and a rescue. A VM stored
 * before this has NULL until its next start from stopped or rescue (with a bridge
 * configured): it then keeps the MAC it has, libvirt's, if no other VM has it
 * (src/drivers/libvirt/macs.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('libvirt_vms').addColumn('mac', 'text').execute();
  await db.schema.createIndex('libvirt_vms_mac').unique().on('libvirt_vms').column('mac').execute();
}
