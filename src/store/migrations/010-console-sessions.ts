import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * The operator console's sessions (docs/design/contract.md#operator-console).
 *
 * The browser holds a random secret in an `HttpOnly` cookie; the store keeps only its SHA-256
 * (`id`), so a copy of the database opens no session. A session ends at `expires_at` (absolute),
 * after `idle` without use (`last_seen_at`), at logout, or when its operator is disabled.
 * `expires_at` is indexed for the pruner, `operator_id` to end an operator's sessions.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const ms = 'bigint';
  await db.schema
    .createTable('console_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('operator_id', 'text', (c) => c.notNull().references('operators.id'))
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('last_seen_at', ms, (c) => c.notNull())
    .addColumn('expires_at', ms, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('console_sessions_expires')
    .on('console_sessions')
    .column('expires_at')
    .execute();
  await db.schema
    .createIndex('console_sessions_operator')
    .on('console_sessions')
    .column('operator_id')
    .execute();
}
