import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * `libvirt_vms.mac`: the MAC address of the VM's interface, one no other VM of the store has (a
 * unique index; NULLs do not count). libvirt left alone gives each new interface a random
 * `52:54:00:xx:xx:xx`, 24 random bits chosen without looking at other hosts: two VMs on one
 * provider network collide with a probability of about n²/2²⁵ (a fleet of 5,000 VMs: one chance
 * in two), and then both lose packets. A VM's MAC is given once, from a range libvirt's own never
 * fall in, and written into every definition of the domain (its own, its rescue system's), so it
 * also stays the same across a reinstall and a rescue. A VM stored before this has NULL until
 * its domain is next written: it then keeps the MAC it has if no other VM has it
 * (src/drivers/libvirt/macs.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('libvirt_vms').addColumn('mac', 'text').execute();
  await db.schema.createIndex('libvirt_vms_mac').unique().on('libvirt_vms').column('mac').execute();
}
