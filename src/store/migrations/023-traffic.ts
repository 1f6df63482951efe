import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Traffic accounting and limits.
 *
 * `traffic_samples`: the last interface counters the worker read of each VM (keyed by the
 * service id, which names the VM): the host they were read on, the driver's `session` (what
 * changes when the counters start again from zero: a boot, a migration), the two counters
 * (bytes into and out of the server) and `seq`, moved by every sample. A sample is one
 * conditional update on `seq`, so of several workers that read the same counters only one
 * counts the difference.
 *
 * `traffic_days`: bytes in and out per service per UTC day (`day`: the day's first ms). A
 * month's total, what details show and quotas are checked against, is the sum of its days; a
 * usage report sums the days that begin in its period.
 *
 * `traffic_months`: a service past its product's quota in a UTC month (`month`: the month's
 * first ms): what was done (`throttle` or `suspend`), when, the rate of a throttle, and when a
 * throttle was lifted (the next month). One row per service and month, inserted once: what
 * makes `service.traffic_exceeded` once per service per month.
 *
 * `traffic_host_totals`: bytes in and out counted on each host since the start, for /metrics.
 *
 * `products.traffic_gb` (monthly quota per service, GB = 10^9 bytes; null: none) and
 * `products.traffic_over` (`throttle:MBIT` or `suspend`; null with no quota).
 *
 * `sim_vms`: the simulated driver's counters (`traffic_in`/`traffic_out` as of `traffic_at`,
 * for the boot and host named by `traffic_session`) and its interface's rate limit
 * (`bandwidth_mbit`, null: none).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('traffic_samples')
    .addColumn('vm_id', 'text', (c) => c.primaryKey())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('session', 'text', (c) => c.notNull())
    .addColumn('counter_in', 'bigint', (c) => c.notNull())
    .addColumn('counter_out', 'bigint', (c) => c.notNull())
    .addColumn('sampled_at', 'bigint', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('traffic_days')
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('day', 'bigint', (c) => c.notNull())
    .addColumn('bytes_in', 'bigint', (c) => c.notNull())
    .addColumn('bytes_out', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('traffic_days_pk', ['service_id', 'day'])
    .execute();
  await db.schema.createIndex('traffic_days_day').on('traffic_days').column('day').execute();
  await db.schema
    .createTable('traffic_months')
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('month', 'bigint', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('throttle_mbit', 'integer')
    .addColumn('exceeded_at', 'bigint', (c) => c.notNull())
    .addColumn('lifted_at', 'bigint')
    .addPrimaryKeyConstraint('traffic_months_pk', ['service_id', 'month'])
    .execute();
  await db.schema
    .createTable('traffic_host_totals')
    .addColumn('host_id', 'text', (c) => c.primaryKey())
    .addColumn('bytes_in', 'bigint', (c) => c.notNull())
    .addColumn('bytes_out', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('products').addColumn('traffic_gb', 'integer').execute();
  await db.schema.alterTable('products').addColumn('traffic_over', 'text').execute();
  await db.schema
    .alterTable('sim_vms')
    .addColumn('traffic_in', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('sim_vms')
    .addColumn('traffic_out', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('sim_vms')
    .addColumn('traffic_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('sim_vms')
    .addColumn('traffic_session', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema.alterTable('sim_vms').addColumn('bandwidth_mbit', 'integer').execute();
}
