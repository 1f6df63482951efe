import { type Kysely, sql } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * An audit log that names people, and suspension history.
 *
 * `audit_log` gains what a person reading it needs besides ids: `actor_name` (the operator's
 * name, `reseller / application` for an application, the local user for the CLI, `system` for
 * the product acting by itself), the credential the request came with (`credential_type`
 * `operator_client`, `console_session` or `application`, and `credential_id`: the client id or
 * the console session's id, never a secret), `source_address` (the caller's address, a proxy's
 * X-Forwarded-For only from a trusted proxy) and `reason` (a suspension's reason...). Entries
 * written before have no credential or address; their operator names are looked up once here
 * (the name at upgrade time), the CLI's is its user, an application's stays null.
 *
 * The product's own entries (host health, evacuations) were written as the command `cli` with
 * the id `system`; they become the actor kind `system`.
 *
 * `service_suspensions`: one row per suspension of a service: when and by whom it was asked,
 * why, and when and by whom it was lifted (null while it lasts). Written in the transaction that
 * accepts the suspend or unsuspend.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const column of ['actor_name', 'credential_type', 'credential_id', 'source_address', 'reason']) {
    await db.schema.alterTable('audit_log').addColumn(column, 'text').execute();
  }
  await sql`UPDATE audit_log SET actor_type = 'system' WHERE actor_type = 'cli' AND actor_id = 'system'`.execute(
    db,
  );
  await sql`UPDATE audit_log SET actor_name = actor_id WHERE actor_type IN ('cli', 'system')`.execute(db);
  await sql`UPDATE audit_log SET actor_name = (SELECT o.name FROM operators o WHERE o.id = audit_log.actor_id) WHERE actor_type = 'operator'`.execute(
    db,
  );
  await db.schema.createIndex('audit_log_action').on('audit_log').columns(['action', 'id']).execute();
  await db.schema.createIndex('audit_log_actor_name').on('audit_log').columns(['actor_name', 'id']).execute();

  await db.schema
    .createTable('service_suspensions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('suspended_at', 'bigint', (c) => c.notNull())
    .addColumn('suspended_by_type', 'text', (c) => c.notNull())
    .addColumn('suspended_by_id', 'text', (c) => c.notNull())
    .addColumn('suspended_by_name', 'text')
    .addColumn('reason', 'text')
    .addColumn('lifted_at', 'bigint')
    .addColumn('lifted_by_type', 'text')
    .addColumn('lifted_by_id', 'text')
    .addColumn('lifted_by_name', 'text')
    .execute();
  await db.schema
    .createIndex('service_suspensions_service')
    .on('service_suspensions')
    .columns(['service_id', 'suspended_at'])
    .execute();
}
