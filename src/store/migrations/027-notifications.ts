import { type Kysely, sql } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Notifications to the operators (docs/design/contract.md#notifications-to-the-operators).
 *
 * `notifications`: the outbox and the record of what was notified: one row per notification
 * (a job that failed for good, a host unreachable or full, a reseller near a quota, a webhook
 * failing for a day, or one of these conditions ending), `batch` null until a flush takes it
 * into a batch. Ids are UUIDv7, so the newest sort last.
 *
 * `notification_batches`: one row, `id` 'flush': the number of the last batch formed and when.
 * Forming a batch is a conditional update of this row, so of several processes exactly one forms
 * each batch, and at most one is formed per batch window.
 *
 * `notification_channels`: where batches go: `email` (the SMTP recipients) or an operator
 * webhook (`kind` 'webhook', `channel` its id). Each has the last batch it was sent
 * (`sent_batch`), its retry state (attempts, next attempt, the last error) and the lease of the
 * process sending to it.
 *
 * `notification_conditions`: the lasting conditions in force (a host full on a resource, a
 * reseller near a quota, a webhook failing), by key, so that each is notified when it starts and
 * when it ends, not at every look.
 *
 * `operator_webhooks`: the operators' own receivers, their secrets sealed with the secret box.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const ms = 'bigint';
  await db.schema
    .createTable('notifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('summary', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('batch', 'integer')
    .execute();
  await db.schema.createIndex('notifications_batch').on('notifications').columns(['batch', 'id']).execute();
  await db.schema.createIndex('notifications_created').on('notifications').column('created_at').execute();

  await db.schema
    .createTable('notification_batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('last_batch', 'integer', (c) => c.notNull())
    .addColumn('last_batch_at', ms, (c) => c.notNull())
    .execute();
  await sql`INSERT INTO notification_batches (id, last_batch, last_batch_at) VALUES ('flush', 0, 0)`.execute(
    db,
  );

  await db.schema
    .createTable('notification_channels')
    .addColumn('channel', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('sent_batch', 'integer', (c) => c.notNull())
    .addColumn('last_sent_at', ms)
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', ms, (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', ms)
    .execute();

  await db.schema
    .createTable('notification_conditions')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('since', ms, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('operator_webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('secret_enc', 'text', (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .execute();
}
