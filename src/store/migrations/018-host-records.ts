import { type Kysely, sql } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Hosts are records (docs/design/contract.md#hosts-and-migration): the operator adds, changes,
 * drains, evacuates and removes them at run time; the settings that listed them only seed a
 * fresh store.
 *
 * `hypervisor_hosts` gains:
 * - `name`: the operator's name for the host, unique (existing hosts: their id).
 * - `driver`: `simulated` or `libvirt`. Existing hosts: the driver whose VMs they hold; a host
 *   that holds none is adopted by the driver the process is configured with at its next start.
 * - `uri`: the libvirt connection (null for simulated hosts; existing libvirt hosts get theirs
 *   from the settings at the next start).
 * - `created_at`.
 * - `health`: `up` or `unreachable`; `failing_since`: when the current run of failed probes
 *   began (null while the host answers); `checked_at`: the last probe.
 * - `evacuation_started_at`: set while the host is `evacuating` (state), kept once it ends so the
 *   hosts page can show the last evacuation's counts.
 *
 * `host_evacuation_moves`: one row per service an evacuation queued a migration for, with that
 * job; the evacuation's counts are the jobs' statuses.
 *
 * `sim_vms.migrating_to`, `libvirt_vms.migrating_to`: the destination a migration reserved room
 * on, set before the move and cleared in the transaction that ends it, so a migration re-run
 * after a crash finds its reservation and looks at both hosts.
 *
 * `host_images`: which template base images each libvirt host holds as a storage volume, with
 * their checksum, so each is copied once per host.
 *
 * `sim_host_outages`: simulated hosts that do not answer (the simulated hypervisor's outside
 * world: drivers/simulated/outside.ts), for host health on the simulated driver.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const hosts = () => db.schema.alterTable('hypervisor_hosts');
  await hosts()
    .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await hosts().addColumn('driver', 'text').execute();
  await hosts().addColumn('uri', 'text').execute();
  await hosts()
    .addColumn('created_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await hosts()
    .addColumn('health', 'text', (c) => c.notNull().defaultTo(sql.lit('up')))
    .execute();
  await hosts().addColumn('failing_since', 'bigint').execute();
  await hosts().addColumn('checked_at', 'bigint').execute();
  await hosts().addColumn('evacuation_started_at', 'bigint').execute();
  await sql`update hypervisor_hosts set name = id`.execute(db);
  await sql`update hypervisor_hosts set driver = 'libvirt'
    where exists (select 1 from libvirt_vms v where v.host_id = hypervisor_hosts.id)`.execute(db);
  await sql`update hypervisor_hosts set driver = 'simulated'
    where driver is null and exists (select 1 from sim_vms v where v.host_id = hypervisor_hosts.id)`.execute(
    db,
  );
  await db.schema
    .createIndex('hypervisor_hosts_name')
    .unique()
    .on('hypervisor_hosts')
    .column('name')
    .execute();

  await db.schema.alterTable('sim_vms').addColumn('migrating_to', 'text').execute();
  await db.schema.alterTable('libvirt_vms').addColumn('migrating_to', 'text').execute();

  await db.schema
    .createTable('host_evacuation_moves')
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('queued_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('host_evacuation_moves_pk', ['host_id', 'service_id'])
    .execute();

  await db.schema
    .createTable('host_images')
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('template_id', 'text', (c) => c.notNull())
    .addColumn('volume', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('host_images_pk', ['host_id', 'template_id'])
    .execute();

  await db.schema
    .createTable('sim_host_outages')
    .addColumn('host_id', 'text', (c) => c.primaryKey())
    .addColumn('since', 'bigint', (c) => c.notNull())
    .execute();
}
