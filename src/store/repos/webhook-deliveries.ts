import type { Expression, ExpressionBuilder, Kysely } from 'kysely';
import type { Store } from '../database.ts';
import { insertRows } from '../insert-row.ts';
import { prepare, slot } from '../prepared.ts';
import type { Database, DeliveryStatus, WebhookDeliveryTable } from '../schema.ts';

/** A delivery is one event for one webhook. */
export interface DeliveryKey {
  readonly webhookId: string;
  readonly eventId: string;
}

export interface Delivery extends DeliveryKey {
  readonly status: DeliveryStatus;
  /** Attempts started, this one included once claimed. */
  readonly attempts: number;
  readonly nextAttemptAt: number;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly createdAt: number;
  readonly finishedAt: number | null;
}

function toDelivery(r: WebhookDeliveryTable): Delivery {
  return {
    webhookId: r.webhook_id,
    eventId: r.event_id,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastStatus: r.last_status,
    lastError: r.last_error,
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  };
}

/** Queues deliveries, due at once: one statement for all of them. */
export async function enqueueDeliveries(
  db: Kysely<Database>,
  keys: readonly DeliveryKey[],
  now: number,
): Promise<void> {
  await insertRows(
    db,
    'webhook_deliveries',
    keys.map(
      (k): WebhookDeliveryTable => ({
        webhook_id: k.webhookId,
        event_id: k.eventId,
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        locked_by: null,
        locked_until: null,
        last_status: null,
        last_error: null,
        created_at: now,
        finished_at: null,
      }),
    ),
  );
}

const unlocked =
  (realNow: number | Expression<number>) =>
  ({ eb }: ExpressionBuilder<Database, 'webhook_deliveries'>) =>
    eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', realNow)]);

/** A webhook with an attempt due: its oldest due event, whose it is and where it goes. */
export interface DueCandidate extends DeliveryKey {
  readonly resellerId: string;
  readonly url: string;
}

export interface CandidateQuery {
  /** The server's clock: which attempts are due. */
  readonly now: number;
  /** Real time: whose lease ran out (leases are in real time, as jobs' are). */
  readonly realNow: number;
  /** Webhooks to leave out: this process sends to them already, or to their endpoint as much as it may. */
  readonly exceptWebhooks: readonly string[];
  /** Resellers to leave out: they hold their share of this process's senders. */
  readonly exceptResellers: readonly string[];
  readonly limit: number;
}

/**
 * Whether any attempt is due and free: one probe of the `webhook_deliveries_due` index. The
 * sender asks this first, after every job run: the fair pick below groups, ranks and sorts in
 * temporary B-trees, which costs SQLite about 0.3 ms even when no delivery is pending at all
 * (bench/FINDINGS.md, "The webhook sender's look when nothing is due").
 */
const anyDueStatement = prepare({ now: slot<number>(), realNow: slot<number>() }, (db, s) =>
  db
    .selectFrom('webhook_deliveries')
    .select('webhook_id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', s.now)
    .where(unlocked(s.realNow))
    .limit(1),
);

export async function anyDue(
  db: Kysely<Database>,
  q: Pick<CandidateQuery, 'now' | 'realNow'>,
): Promise<boolean> {
  return (await anyDueStatement.first(db, { now: q.now, realNow: q.realNow })) !== undefined;
}

/**
 * Webhooks with an attempt due, one row each (its oldest due event), taken in turns between
 * resellers: every reseller's longest-waiting webhook first, then every reseller's second, and
 * so on, each turn longest-waiting first. So a reseller with a backlog or many failing
 * receivers fills no more of `limit` than any other before each has had a turn.
 */
export async function dueCandidates(db: Kysely<Database>, q: CandidateQuery): Promise<DueCandidate[]> {
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .select((eb) => [
      'd.webhook_id',
      'w.reseller_id',
      'w.url',
      eb.fn.min('d.event_id').as('event_id'),
      eb.fn.min('d.next_attempt_at').as('due'),
      eb.fn
        .agg('row_number')
        .over((ob) =>
          ob.partitionBy('w.reseller_id').orderBy(eb.fn.min('d.next_attempt_at')).orderBy('d.webhook_id'),
        )
        .as('turn'),
    ])
    .where('d.status', '=', 'pending')
    .where('d.next_attempt_at', '<=', q.now)
    .where((eb) => eb.or([eb('d.locked_until', 'is', null), eb('d.locked_until', '<', q.realNow)]))
    .$if(q.exceptWebhooks.length > 0, (qb) => qb.where('d.webhook_id', 'not in', q.exceptWebhooks))
    .$if(q.exceptResellers.length > 0, (qb) => qb.where('w.reseller_id', 'not in', q.exceptResellers))
    .groupBy(['d.webhook_id', 'w.reseller_id', 'w.url'])
    .orderBy('turn')
    .orderBy('due')
    .orderBy('d.webhook_id')
    .limit(q.limit)
    .execute();
  return rows.map((r) => ({
    webhookId: r.webhook_id,
    eventId: r.event_id,
    resellerId: r.reseller_id,
    url: r.url,
  }));
}

export interface ClaimRequest {
  readonly workerId: string;
  /** The attempts to take (dueCandidates' picks): those still due and free are taken. */
  readonly keys: readonly DeliveryKey[];
  /** The server's clock: which attempts are due. */
  readonly now: number;
  /** Real time: whose lease ran out. */
  readonly realNow: number;
  readonly leaseUntil: number;
}

/**
 * Claims the chosen attempts for `workerId`, those still due and free. One statement: the lease
 * is taken on the rows the inner query found, and on PostgreSQL those are read FOR UPDATE SKIP
 * LOCKED, so concurrent processes take different attempts instead of waiting on each other; on
 * SQLite the statement runs under the write lock. An attempt is thereby owned by exactly one
 * process until its lease runs out; one another process took meanwhile is left out.
 */
export async function claimDeliveries(
  store: Pick<Store, 'db' | 'features'>,
  c: ClaimRequest,
): Promise<Delivery[]> {
  if (c.keys.length === 0) return [];
  const { db } = store;
  const lockable = db
    .selectFrom('webhook_deliveries')
    .select(['webhook_id', 'event_id'])
    .where((eb) =>
      eb.or(c.keys.map((k) => eb.and([eb('webhook_id', '=', k.webhookId), eb('event_id', '=', k.eventId)]))),
    )
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', c.now)
    .where(unlocked(c.realNow))
    .$if(store.features.skipLocked, (q) => q.forUpdate().skipLocked());
  const rows = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      locked_by: c.workerId,
      locked_until: c.leaseUntil,
      attempts: eb('attempts', '+', 1),
    }))
    .where(({ eb, refTuple }) =>
      eb(refTuple('webhook_id', 'event_id'), 'in', lockable.$asTuple('webhook_id', 'event_id')),
    )
    .returningAll()
    .execute();
  return rows.map(toDelivery);
}

/** How an attempt ended: a 2xx, or a failure with what it got and when to try again (null: never). */
export type AttemptOutcome =
  | { readonly ok: true; readonly httpStatus: number }
  | {
      readonly ok: false;
      readonly httpStatus: number | null;
      readonly error: string;
      readonly retryAt: number | null;
    };

/** Records an attempt's outcome, if `workerId` still owns it; false when its lease was lost. */
export async function recordAttempt(
  db: Kysely<Database>,
  key: DeliveryKey,
  workerId: string,
  outcome: AttemptOutcome,
  now: number,
): Promise<boolean> {
  const final = outcome.ok || outcome.retryAt === null;
  const status: DeliveryStatus = outcome.ok ? 'succeeded' : final ? 'failed' : 'pending';
  const r = await db
    .updateTable('webhook_deliveries')
    .set({
      status,
      last_status: outcome.httpStatus,
      last_error: outcome.ok ? null : outcome.error,
      locked_by: null,
      locked_until: null,
      finished_at: final ? now : null,
      ...(!outcome.ok && outcome.retryAt !== null ? { next_attempt_at: outcome.retryAt } : {}),
    })
    .where('webhook_id', '=', key.webhookId)
    .where('event_id', '=', key.eventId)
    .where('locked_by', '=', workerId)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/**
 * Gives an attempt back unmade (the process is stopping): the lease goes and the attempt is not
 * counted, so another process (or this one, restarted) makes it at once.
 */
export async function releaseAttempt(
  db: Kysely<Database>,
  key: DeliveryKey,
  workerId: string,
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ locked_by: null, locked_until: null, attempts: eb('attempts', '-', 1) }))
    .where('webhook_id', '=', key.webhookId)
    .where('event_id', '=', key.eventId)
    .where('locked_by', '=', workerId)
    .execute();
}

/** Removes a delivery that can no longer be made (its webhook was deleted, its event pruned). */
export async function dropDelivery(db: Kysely<Database>, key: DeliveryKey): Promise<void> {
  await db
    .deleteFrom('webhook_deliveries')
    .where('webhook_id', '=', key.webhookId)
    .where('event_id', '=', key.eventId)
    .execute();
}

/** When the longest-waiting due attempt became due, or undefined if none is due. */
export async function oldestDueAttempt(db: Kysely<Database>, now: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.min('next_attempt_at').as('due'))
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .executeTakeFirst();
  return row?.due === null || row?.due === undefined ? undefined : Number(row.due);
}

/** The deliveries of an event, for tests and the operator (no secret in them). */
export async function deliveriesOf(db: Kysely<Database>, eventId: string): Promise<Delivery[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('event_id', '=', eventId)
    .orderBy('webhook_id')
    .execute();
  return rows.map(toDelivery);
}
