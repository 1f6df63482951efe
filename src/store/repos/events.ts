import { type Kysely, sql } from 'kysely';
import type { EventType, NewEvent } from '../../domain/events.ts';
import { createMonotonicUuidv7 } from '../../domain/ids.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import { dialectOf } from '../dialect-of.ts';
import { insertRows } from '../insert-row.ts';
import type { Database, EventTable } from '../schema.ts';
import { type DeliveryKey, enqueueDeliveries } from './webhook-deliveries.ts';
import { receives, webhookSubscriptions } from './webhooks.ts';

/** An event as stored: its data is kept as the JSON text it was recorded as. */
export interface StoredEvent {
  readonly id: string;
  readonly type: EventType;
  /** JSON text of the event's data. */
  readonly data: string;
  readonly createdAt: number;
}

/** Event ids: time-ordered, and in the order this process recorded them within a millisecond too. */
const nextEventId = createMonotonicUuidv7(() => randomPoolBytes(16));

const toEvent = (r: Pick<EventTable, 'id' | 'type' | 'data' | 'created_at'>): StoredEvent => ({
  id: r.id,
  type: r.type,
  data: r.data,
  createdAt: Number(r.created_at),
});

/**
 * Records a reseller's events, and queues them for each of its webhooks that wants them, in the
 * caller's transaction (the one that makes the change the events tell): the events exist if and
 * only if the change does. One insert for the events, one read of the reseller's webhooks, and
 * one insert of deliveries only if some webhook wants them. Returns the events recorded.
 */
export async function recordEvents(
  db: Kysely<Database>,
  resellerId: string,
  events: readonly NewEvent[],
  now: number,
): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  const rows = events.map((e) => ({
    id: nextEventId(now),
    reseller_id: resellerId,
    type: e.type,
    data: JSON.stringify(e.data),
    created_at: now,
  }));
  await insertRows(db, 'events', rows);
  const hooks = await webhookSubscriptions(db, resellerId);
  const deliveries: DeliveryKey[] = [];
  for (const hook of hooks) {
    for (const row of rows)
      if (receives(hook, row.type)) deliveries.push({ webhookId: hook.id, eventId: row.id });
  }
  if (deliveries.length > 0) await enqueueDeliveries(db, deliveries, now);
  return rows.map(toEvent);
}

/**
 * The reseller's events after the event `after` (from the first kept if undefined), oldest
 * first; undefined when `after` is not one of the reseller's events (unknown, another
 * reseller's, or pruned).
 *
 * The order is the store's commit order, so a client that pages with the last id it got never
 * misses an event that committed after it read: on SQLite commits take turns, so `seq` is that
 * order; on PostgreSQL events are ordered by their transaction id and shown only once every
 * transaction that could still commit one before them has ended (pg_snapshot_xmin), which holds
 * an event back at most as long as the longest transaction running beside it.
 */
export async function listEvents(
  db: Kysely<Database>,
  resellerId: string,
  after: string | undefined,
  limit: number,
): Promise<StoredEvent[] | undefined> {
  const columns = ['id', 'type', 'data', 'created_at'] as const;
  if (dialectOf(db) === 'sqlite') {
    let afterSeq = 0;
    if (after !== undefined) {
      const cursor = await db
        .selectFrom('events')
        .select('seq')
        .where('id', '=', after)
        .where('reseller_id', '=', resellerId)
        .executeTakeFirst();
      if (!cursor) return undefined;
      afterSeq = cursor.seq;
    }
    const rows = await db
      .selectFrom('events')
      .select(columns)
      .where('reseller_id', '=', resellerId)
      .where('seq', '>', afterSeq)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map(toEvent);
  }
  let from = sql<boolean>`true`;
  if (after !== undefined) {
    const cursor = await db
      .selectFrom('events')
      .select([sql<string>`tx::text`.as('tx'), 'seq'])
      .where('id', '=', after)
      .where('reseller_id', '=', resellerId)
      .executeTakeFirst();
    if (!cursor) return undefined;
    from = sql<boolean>`(tx, seq) > (${cursor.tx}::xid8, ${cursor.seq})`;
  }
  const rows = await db
    .selectFrom('events')
    .select(columns)
    .where('reseller_id', '=', resellerId)
    .where(from)
    .where(sql<boolean>`tx < pg_snapshot_xmin(pg_current_snapshot())`)
    .orderBy(sql`tx`)
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map(toEvent);
}

/** Events by id, whoever owns them (the sender's read). */
export async function eventsById(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, StoredEvent>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('events')
    .select(['id', 'type', 'data', 'created_at'])
    .where('id', 'in', ids)
    .execute();
  return new Map(rows.map((r) => [r.id, toEvent(r)]));
}
