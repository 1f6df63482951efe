import { type Kysely, sql } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * The operator API's hosts and lists (docs/design/contract.md#operator-api).
 *
 * `hypervisor_hosts.state`: `active` or `draining`. Placement (drivers/hosts.ts, both drivers)
 * only takes active hosts; a draining host keeps its VMs and their resizes.
 *
 * Indexes for the operator's lists, so that a page is an index range with a million services:
 * - `services_status_id` (status, id): services of one status across resellers, newest first
 *   (ids are time-ordered UUIDv7). One reseller's services already have `services_status`
 *   (reseller_id, id, status, ...), whose third column filters the status inside the range.
 * - `services_domain` (domain_name): the `q` search by domain name.
 * - `jobs_status_created` (status, created_at, id): failed, queued or running jobs, newest first.
 * - `sim_vms_host`, `libvirt_vms_host` (host_id): how many VMs each host holds (GET OPS/hosts),
 *   counted from the driver's own VM table rather than from services, whose writes are hotter.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('hypervisor_hosts')
    .addColumn('state', 'text', (c) => c.notNull().defaultTo(sql.lit('active')))
    .execute();
  await db.schema.createIndex('services_status_id').on('services').columns(['status', 'id']).execute();
  await db.schema.createIndex('services_domain').on('services').column('domain_name').execute();
  await db.schema
    .createIndex('jobs_status_created')
    .on('jobs')
    .columns(['status', 'created_at', 'id'])
    .execute();
  await db.schema.createIndex('sim_vms_host').on('sim_vms').column('host_id').execute();
  await db.schema.createIndex('libvirt_vms_host').on('libvirt_vms').column('host_id').execute();
}
