import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';
import { IDEMPOTENCY_TTL_MS } from './idempotency-keys.ts';

/** Rows removed by one batch of each kind. */
export interface PrunedCounts {
  jobs: number;
  scheduleSlots: number;
  idempotencyKeys: number;
  auditEntries: number;
  events: number;
  webhookDeliveries: number;
  consoleSessions: number;
}

/**
 * Deletes at most `batch` finished jobs that ended before `jobsBefore`. Only finished jobs go:
 * a queued or running job has no finished_at.
 */
export async function pruneFinishedJobs(
  db: Kysely<Database>,
  jobsBefore: number,
  batch: number,
): Promise<number> {
  const r = await db
    .deleteFrom('jobs')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('jobs')
        .select('id')
        .where('finished_at', '<', jobsBefore)
        .where('status', 'in', ['succeeded', 'failed', 'skipped'])
        .limit(batch),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes at most `batch` handled schedule slots recorded before `before` (long past any grace period). */
export async function pruneScheduleSlots(
  db: Kysely<Database>,
  before: number,
  batch: number,
): Promise<number> {
  const r = await db
    .deleteFrom('schedule_slots')
    .where(({ eb, refTuple, selectFrom }) =>
      eb(
        refTuple('schedule_id', 'slot_at'),
        'in',
        selectFrom('schedule_slots')
          .select(['schedule_id', 'slot_at'])
          .where('created_at', '<', before)
          .limit(batch)
          .$asTuple('schedule_id', 'slot_at'),
      ),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes at most `batch` idempotency keys past their 24 hours. */
export async function pruneIdempotencyKeys(
  db: Kysely<Database>,
  now: number,
  batch: number,
): Promise<number> {
  const r = await db
    .deleteFrom('idempotency_keys')
    .where(({ eb, refTuple, selectFrom }) =>
      eb(
        refTuple('reseller_id', 'key'),
        'in',
        selectFrom('idempotency_keys')
          .select(['reseller_id', 'key'])
          .where('created_at', '<=', now - IDEMPOTENCY_TTL_MS)
          .limit(batch)
          .$asTuple('reseller_id', 'key'),
      ),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes at most `batch` events recorded before `before` (the events' retention). */
export async function pruneEvents(db: Kysely<Database>, before: number, batch: number): Promise<number> {
  const r = await db
    .deleteFrom('events')
    .where('id', 'in', (eb) =>
      eb.selectFrom('events').select('id').where('created_at', '<', before).limit(batch),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * Deletes at most `batch` webhook deliveries queued before `before`. Kept as long as their
 * events, they are long finished by then (the last retry comes about 28 hours after the
 * event; events are kept at least 7 days); this also takes those of deleted webhooks.
 */
export async function pruneWebhookDeliveries(
  db: Kysely<Database>,
  before: number,
  batch: number,
): Promise<number> {
  const r = await db
    .deleteFrom('webhook_deliveries')
    .where(({ eb, refTuple, selectFrom }) =>
      eb(
        refTuple('webhook_id', 'event_id'),
        'in',
        selectFrom('webhook_deliveries')
          .select(['webhook_id', 'event_id'])
          .where('created_at', '<', before)
          .limit(batch)
          .$asTuple('webhook_id', 'event_id'),
      ),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes at most `batch` audit entries written before `before` (the audit retention period ago). */
export async function pruneAuditEntries(
  db: Kysely<Database>,
  before: number,
  batch: number,
): Promise<number> {
  const r = await db
    .deleteFrom('audit_log')
    .where('id', 'in', (eb) =>
      eb.selectFrom('audit_log').select('id').where('created_at', '<', before).limit(batch),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes at most `batch` console sessions that expired before `now` (logins end by themselves). */
export async function pruneConsoleSessions(
  db: Kysely<Database>,
  now: number,
  batch: number,
): Promise<number> {
  const r = await db
    .deleteFrom('console_sessions')
    .where('id', 'in', (eb) =>
      eb.selectFrom('console_sessions').select('id').where('expires_at', '<=', now).limit(batch),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
