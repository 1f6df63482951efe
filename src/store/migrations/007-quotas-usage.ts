import { type Kysely, sql } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Reseller quotas and usage intervals (docs/design/contract.md#quotas-and-usage).
 *
 * `reseller_quotas`: one row per reseller with a quota, a null cap meaning unlimited; no row,
 * no quota (the order path then skips the check altogether).
 *
 * `usage_intervals`: per service, each stretch of time with the same resources, from a create
 * that succeeded to the terminate; an upgrade, suspend or unsuspend closes one and opens the
 * next. `ended_at` is null while open. The indexes make the report's reads ranges:
 * - `usage_intervals_open`: at most one open interval per service, and the one a change closes;
 * - `usage_intervals_reseller_end`: one reseller's intervals still open, or ended after the start
 *   of the period (the only ones that can overlap it);
 * - `usage_intervals_end`: the same over every reseller.
 *
 * `jobs_waiting_upgrades`: the upgrades accepted and not finished, per reseller (they count at
 * their new size against the quota); partial, so other jobs never write to it.
 *
 * Services already on a host get an open interval from now: usage is recorded from this version on.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const ms = 'bigint';
  await db.schema
    .createTable('reseller_quotas')
    .addColumn('reseller_id', 'text', (c) => c.primaryKey().references('resellers.id'))
    .addColumn('services', 'integer')
    .addColumn('cpu', 'integer')
    .addColumn('ram', 'integer')
    .addColumn('hdd', 'integer')
    .addColumn('ip', 'integer')
    .addColumn('backup', 'integer')
    .addColumn('updated_at', ms, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('usage_intervals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('service_id', 'text', (c) => c.notNull().references('services.id'))
    .addColumn('reseller_id', 'text', (c) => c.notNull())
    .addColumn('product_id', 'text', (c) => c.notNull())
    .addColumn('cpu', 'integer', (c) => c.notNull())
    .addColumn('ram', 'integer', (c) => c.notNull())
    .addColumn('hdd', 'integer', (c) => c.notNull())
    .addColumn('ip', 'integer', (c) => c.notNull())
    .addColumn('backup', 'integer', (c) => c.notNull())
    .addColumn('suspended', 'integer', (c) => c.notNull())
    .addColumn('started_at', ms, (c) => c.notNull())
    .addColumn('ended_at', ms)
    .execute();
  await db.schema
    .createIndex('usage_intervals_open')
    .on('usage_intervals')
    .column('service_id')
    .unique()
    .where(sql.ref('ended_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('usage_intervals_reseller_end')
    .on('usage_intervals')
    .columns(['reseller_id', 'ended_at'])
    .execute();
  await db.schema.createIndex('usage_intervals_end').on('usage_intervals').column('ended_at').execute();

  await db.schema
    .createIndex('jobs_waiting_upgrades')
    .on('jobs')
    .column('reseller_id')
    .where(sql<boolean>`action = 'upgrade' and status in ('queued', 'running')`)
    .execute();

  // The service's own id is a unique id for its first interval: later ones get new UUIDs.
  await sql`insert into usage_intervals
      (id, service_id, reseller_id, product_id, cpu, ram, hdd, ip, backup, suspended, started_at, ended_at)
    select id, id, reseller_id, product_id, cpu, ram, hdd, ip_count, backup,
      case when status = 'suspended' then 1 else 0 end, cast(${Date.now()} as bigint), null
    from services where host_id is not null and terminated_at is null`.execute(db);
}
