import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect-of.ts';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Events, webhooks and their deliveries (docs/design/contract.md#events-and-webhooks).
 *
 * `events.seq` orders each reseller's feed in commit order, so that a reader that has seen seq N
 * never finds a smaller one appear later: on SQLite writers take turns (BEGIN IMMEDIATE); on
 * PostgreSQL, which hands out identity values before commit, the transactions that record a
 * reseller's events take turns from their insert to their commit (src/store/repos/events.ts).
 *
 * `webhook_deliveries` is the durable queue: one row per event and webhook, with its attempts,
 * when the next is due, the lease of the process sending it and what the last attempt got. No
 * foreign keys: a webhook deleted while a job records an event must not make the job's
 * transaction fail; deliveries of a deleted webhook are never claimed and are pruned.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const ms = 'bigint';
  const postgres = dialectOf(db) === 'postgres';

  await db.schema
    .createTable('events')
    .addColumn('seq', postgres ? 'bigint' : 'integer', (c) =>
      postgres ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey().autoIncrement(),
    )
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('reseller_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_feed').on('events').columns(['reseller_id', 'seq']).execute();
  await db.schema.createIndex('events_created').on('events').column('created_at').execute();

  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('reseller_id', 'text', (c) => c.notNull().references('resellers.id'))
    .addColumn('url', 'text', (c) => c.notNull())
    // JSON array of event types; null: every type, also those added later.
    .addColumn('event_types', 'text')
    // `whsec_...` sealed with the secret box (auth/secret-box.ts): the server must sign with it.
    .addColumn('secret_enc', 'text', (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhooks_reseller')
    .on('webhooks')
    .columns(['reseller_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', ms, (c) => c.notNull())
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', ms)
    .addColumn('last_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('finished_at', ms)
    .addPrimaryKeyConstraint('webhook_deliveries_pk', ['webhook_id', 'event_id'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_created')
    .on('webhook_deliveries')
    .column('created_at')
    .execute();
}
