import type { Kysely } from 'kysely';
import { byCodeUnits } from '../../domain/code-unit-text.ts';
import { createMonotonicUuidv7 } from '../../domain/ids.ts';
import {
  type Digest,
  isNotificationKind,
  LISTED_PER_KIND,
  type NewNotification,
  type Notification,
  type NotificationKind,
} from '../../domain/notifications.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import type { Database, NotificationChannelTable, NotificationTable } from '../schema.ts';

const nextId = createMonotonicUuidv7(() => randomPoolBytes(16));

function toNotification(r: NotificationTable): Notification {
  const data: unknown = JSON.parse(r.data);
  return {
    id: r.id,
    kind: r.kind,
    subject: r.subject,
    summary: r.summary,
    data: typeof data === 'object' && data !== null ? { ...data } : {},
    createdAt: Number(r.created_at),
    batch: r.batch,
  };
}

/**
 * Puts a notification in the outbox. Called in the transaction of what it tells (a job's end, a
 * host's change of health), so that it exists exactly when that does; sending is the flusher's.
 */
export async function queueNotification(
  db: Kysely<Database>,
  n: NewNotification,
  now: number,
): Promise<void> {
  await db
    .insertInto('notifications')
    .values({
      id: nextId(Date.now()),
      kind: n.kind,
      subject: n.subject,
      summary: n.summary,
      data: JSON.stringify(n.data),
      created_at: now,
      batch: null,
    })
    .execute();
}

/** The newest notifications first, at most `limit`, those of `kind` only if given. */
export async function recentNotifications(
  db: Kysely<Database>,
  q: { readonly limit: number; readonly kind?: NotificationKind | undefined },
): Promise<Notification[]> {
  const rows = await db
    .selectFrom('notifications')
    .selectAll()
    .$if(q.kind !== undefined, (qb) => qb.where('kind', '=', q.kind ?? 'job.failed'))
    .orderBy('id', 'desc')
    .limit(q.limit)
    .execute();
  return rows.map(toNotification);
}

/** Deletes notifications sent before `before` (the record is of recent ones only). */
export async function pruneNotifications(db: Kysely<Database>, before: number): Promise<void> {
  await db
    .deleteFrom('notifications')
    .where('batch', 'is not', null)
    .where('created_at', '<', before)
    .execute();
}

/** The number of the last batch formed (0: none yet). */
export async function lastBatch(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('notification_batches')
    .select('last_batch')
    .where('id', '=', 'flush')
    .executeTakeFirst();
  return row?.last_batch ?? 0;
}

/**
 * Forms the next batch of everything in the outbox, if the last one is at least `windowMs` old
 * and there is something to send; returns its number, or undefined. The batch counter moves in a
 * conditional update, so of several processes exactly one forms a batch (on PostgreSQL the
 * others wait for its commit and then find the window not over; SQLite's writers take turns),
 * and the notifications are taken in the same transaction.
 */
export async function formBatch(
  db: Kysely<Database>,
  now: number,
  windowMs: number,
): Promise<number | undefined> {
  return db.transaction().execute(async (tx) => {
    const formed = await tx
      .updateTable('notification_batches')
      .set((eb) => ({ last_batch: eb('last_batch', '+', 1), last_batch_at: now }))
      .where('id', '=', 'flush')
      .where('last_batch_at', '<=', now - windowMs)
      .where((eb) => eb.exists(eb.selectFrom('notifications').select('id').where('batch', 'is', null)))
      .returning('last_batch')
      .executeTakeFirst();
    if (!formed) return undefined;
    await tx
      .updateTable('notifications')
      .set({ batch: formed.last_batch })
      .where('batch', 'is', null)
      .execute();
    return formed.last_batch;
  });
}

/**
 * What the batches after `after` up to `upTo` hold: the count of each kind, and at most
 * LISTED_PER_KIND of each kind listed, oldest first.
 */
export async function digestOf(db: Kysely<Database>, after: number, upTo: number): Promise<Digest> {
  const counted = await db
    .selectFrom('notifications')
    .select((eb) => ['kind', eb.fn.countAll<number | string | bigint>().as('n')])
    .where('batch', '>', after)
    .where('batch', '<=', upTo)
    .groupBy('kind')
    .execute();
  const counts = new Map<NotificationKind, number>();
  for (const r of counted) if (isNotificationKind(r.kind)) counts.set(r.kind, Number(r.n));
  const listed: Notification[] = [];
  for (const kind of counts.keys()) {
    const rows = await db
      .selectFrom('notifications')
      .selectAll()
      .where('kind', '=', kind)
      .where('batch', '>', after)
      .where('batch', '<=', upTo)
      .orderBy('id')
      .limit(LISTED_PER_KIND)
      .execute();
    listed.push(...rows.map(toNotification));
  }
  listed.sort((a, b) => byCodeUnits(a.id, b.id));
  return { counts, listed };
}

/** A channel batches go to, as the flusher sees it. */
export interface Channel {
  readonly channel: string;
  readonly kind: 'email' | 'webhook';
  readonly sentBatch: number;
  readonly attempts: number;
  readonly lastSentAt: number | null;
  readonly lastError: string | null;
  readonly nextAttemptAt: number;
}

function toChannel(r: NotificationChannelTable): Channel {
  return {
    channel: r.channel,
    kind: r.kind,
    sentBatch: r.sent_batch,
    attempts: r.attempts,
    lastSentAt: r.last_sent_at === null ? null : Number(r.last_sent_at),
    lastError: r.last_error,
    nextAttemptAt: Number(r.next_attempt_at),
  };
}

/**
 * Adds a channel if it is not there, starting after the last batch formed: a channel added now
 * is sent what is notified from now on, not the past.
 */
export async function addChannel(
  db: Kysely<Database>,
  channel: string,
  kind: 'email' | 'webhook',
  now: number,
): Promise<void> {
  await db
    .insertInto('notification_channels')
    .values((eb) => ({
      channel,
      kind,
      sent_batch: eb.fn.coalesce(
        eb.selectFrom('notification_batches').select('last_batch').where('id', '=', 'flush'),
        eb.val(0),
      ),
      last_sent_at: null,
      attempts: 0,
      next_attempt_at: now,
      last_error: null,
      locked_by: null,
      locked_until: null,
    }))
    .onConflict((oc) => oc.column('channel').doNothing())
    .execute();
}

/** Channels by id (the operator webhooks' state). */
export async function channelsById(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, Channel>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('notification_channels').selectAll().where('channel', 'in', ids).execute();
  return new Map(rows.map((r) => [r.channel, toChannel(r)]));
}

/**
 * The channels with a message to send now: behind the last batch, due (retries wait their
 * backoff), not sent to within the window, and not being sent to by a process.
 */
export async function dueChannels(
  db: Kysely<Database>,
  q: { readonly now: number; readonly realNow: number; readonly windowMs: number; readonly upTo: number },
): Promise<Channel[]> {
  const rows = await db
    .selectFrom('notification_channels')
    .selectAll()
    .where('sent_batch', '<', q.upTo)
    .where('next_attempt_at', '<=', q.now)
    .where((eb) => eb.or([eb('last_sent_at', 'is', null), eb('last_sent_at', '<=', q.now - q.windowMs)]))
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', q.realNow)]))
    .orderBy('channel')
    .execute();
  return rows.map(toChannel);
}

/**
 * Takes the channel for `workerId` until `leaseUntil` (real time), if no process holds it and it
 * still has not been sent `upTo`: one conditional update, so exactly one process sends each message.
 */
export async function claimChannel(
  db: Kysely<Database>,
  c: {
    readonly channel: string;
    readonly workerId: string;
    readonly upTo: number;
    readonly realNow: number;
    readonly leaseUntil: number;
  },
): Promise<boolean> {
  const r = await db
    .updateTable('notification_channels')
    .set({ locked_by: c.workerId, locked_until: c.leaseUntil })
    .where('channel', '=', c.channel)
    .where('sent_batch', '<', c.upTo)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', c.realNow)]))
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/**
 * Holds the channel `workerId` claimed until `leaseUntil` (real time), while its message is still
 * being sent. False: the process no longer holds it (its lease ran out and another took it).
 */
export async function renewChannel(
  db: Kysely<Database>,
  channel: string,
  workerId: string,
  leaseUntil: number,
): Promise<boolean> {
  const r = await db
    .updateTable('notification_channels')
    .set({ locked_until: leaseUntil })
    .where('channel', '=', channel)
    .where('locked_by', '=', workerId)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Records the message sent: the channel is up to `upTo`, its retries start again from none. */
export async function recordChannelSent(
  db: Kysely<Database>,
  channel: string,
  workerId: string,
  upTo: number,
  now: number,
): Promise<void> {
  await db
    .updateTable('notification_channels')
    .set({
      sent_batch: upTo,
      last_sent_at: now,
      attempts: 0,
      last_error: null,
      next_attempt_at: now,
      locked_by: null,
      locked_until: null,
    })
    .where('channel', '=', channel)
    .where('locked_by', '=', workerId)
    .execute();
}

/** Records a failed attempt: what went wrong (no secret in it) and when the next attempt is due. */
export async function recordChannelFailed(
  db: Kysely<Database>,
  channel: string,
  workerId: string,
  error: string,
  nextAttemptAt: number,
): Promise<void> {
  await db
    .updateTable('notification_channels')
    .set((eb) => ({
      attempts: eb('attempts', '+', 1),
      last_error: error.slice(0, 500),
      next_attempt_at: nextAttemptAt,
      locked_by: null,
      locked_until: null,
    }))
    .where('channel', '=', channel)
    .where('locked_by', '=', workerId)
    .execute();
}

/** Removes a channel (its operator webhook was removed, or email is no longer set up). */
export async function removeChannel(db: Kysely<Database>, channel: string): Promise<void> {
  await db.deleteFrom('notification_channels').where('channel', '=', channel).execute();
}

/** The conditions in force whose key starts with `prefix`: each key, and since when it is in force. */
export async function conditionsInForce(db: Kysely<Database>, prefix: string): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('notification_conditions')
    .select(['key', 'since'])
    .where('key', 'like', `${prefix}%`)
    .execute();
  return new Map(rows.map((r) => [r.key, Number(r.since)]));
}

/**
 * Records that a lasting condition started and queues its notification, unless it was in force
 * already: the row's key is unique, so of several processes that see it start, one notifies.
 */
export async function startCondition(
  db: Kysely<Database>,
  key: string,
  n: NewNotification,
  now: number,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .insertInto('notification_conditions')
      .values({ key, since: now })
      .onConflict((oc) => oc.column('key').doNothing())
      .returning('key')
      .executeTakeFirst();
    if (!r) return false;
    await queueNotification(tx, n, now);
    return true;
  });
}

/**
 * Records that a lasting condition ended and queues its notification, if it is still in force
 * since `since` (as the caller read it): one that another process ended and started again since
 * is a new one, which this call leaves alone.
 */
export async function endCondition(
  db: Kysely<Database>,
  key: string,
  since: number,
  n: NewNotification,
  now: number,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .deleteFrom('notification_conditions')
      .where('key', '=', key)
      .where('since', '=', since)
      .executeTakeFirst();
    if (r.numDeletedRows === 0n) return false;
    await queueNotification(tx, n, now);
    return true;
  });
}
