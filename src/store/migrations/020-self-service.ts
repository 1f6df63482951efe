import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * What the reseller's customers do themselves: reinstall with SSH keys, rescue, the console in
 * the browser.
 *
 * `services` gains:
 * - `ssh_keys`: a JSON array of the OpenSSH public keys installed for root (at create-order or the
 *   last reinstall); `[]` for existing rows. Details show their fingerprints only.
 * - `rescue_since`: when the service entered rescue (ms), null when it is not in rescue; the
 *   worker ends a rescue older than VRP_RESCUE_MAX.
 *
 * `hypervisor_hosts.rescue_image`: the host's own rescue image (a path on the host, as a
 * template's image), overriding VRP_RESCUE_IMAGE; null uses the global one.
 *
 * `service_console_links`: the one-time links to a service's console in the browser. The link's
 * token and the session's secret are kept hashed (SHA-256), never in clear; `open_until` bounds
 * the link (60 s), `opened_at` marks it used (single use), `session_until` bounds the session.
 *
 * `sim_vms.rescue_password_hash`: a simulated VM in rescue (SHA-256 of the rescue system's
 * password, as `password_hash`); null when it runs its own system.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('services')
    .addColumn('ssh_keys', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema.alterTable('services').addColumn('rescue_since', 'bigint').execute();
  await db.schema.alterTable('hypervisor_hosts').addColumn('rescue_image', 'text').execute();
  await db.schema.createIndex('services_rescue_since').on('services').column('rescue_since').execute();

  await db.schema
    .createTable('service_console_links')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('reseller_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('open_until', 'bigint', (c) => c.notNull())
    .addColumn('opened_at', 'bigint')
    .addColumn('session_hash', 'text', (c) => c.unique())
    .addColumn('session_until', 'bigint')
    .execute();
  await db.schema
    .createIndex('service_console_links_service')
    .on('service_console_links')
    .column('service_id')
    .execute();

  // Rescue (simulated driver): whether the VM runs the rescue system.
  await db.schema.alterTable('sim_vms').addColumn('rescue_password_hash', 'text').execute();
}
