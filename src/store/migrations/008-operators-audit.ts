import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Operators (the provider's people and scripts) with their API clients, and the audit log.
 *
 * Operator clients have a table of their own rather than rows in `clients` with a null
 * reseller: every query of the reseller API filters on `clients.reseller_id`, and a row without
 * one would be a tenant-less client that a mistake in one query could let through. The token
 * endpoint still has one code path: auth/client-lookup.ts finds either kind by its id's prefix
 * (`vrp_` applications, `vrpop_` operators), and both are checked, throttled and issued tokens
 * alike. One client per operator (`vrp operator rotate-secret NAME` names the operator).
 *
 * Audit entries are written in the transaction of the change they record; the indexes serve
 * the operator API's lists (newest first, by actor, by service, by reseller) and the pruner (by
 * time).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const ms = 'bigint';
  await db.schema
    .createTable('operators')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('updated_at', ms, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('operator_clients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('operator_id', 'text', (c) => c.notNull().unique().references('operators.id'))
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('token_version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('updated_at', ms, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text')
    .addColumn('target_id', 'text')
    .addColumn('service_id', 'text')
    .addColumn('reseller_id', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text')
    .execute();
  await db.schema.createIndex('audit_log_created').on('audit_log').column('created_at').execute();
  await db.schema
    .createIndex('audit_log_actor')
    .on('audit_log')
    .columns(['actor_type', 'actor_id', 'id'])
    .execute();
  await db.schema.createIndex('audit_log_service').on('audit_log').columns(['service_id', 'id']).execute();
  await db.schema.createIndex('audit_log_reseller').on('audit_log').columns(['reseller_id', 'id']).execute();
}
