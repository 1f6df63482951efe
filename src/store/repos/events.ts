import { CompiledQuery, type Kysely } from 'kysely';
import type { EventType, NewEvent } from '../../domain/events.ts';
import { createMonotonicUuidv7 } from '../../domain/ids.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import { dialectOf } from '../dialect-of.ts';
import type { GatedPart } from '../gated-write.ts';
import { insertRows } from '../insert-row.ts';
import { nameStatement } from '../pg-named.ts';
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
 * caller's transaction (the one that makes the change the events tell; always a transaction):
 * the events exist if and only if the change does. One insert for the events, one read of the
 * reseller's webhooks, and one insert of deliveries only if some webhook wants them (on
 * PostgreSQL all three in one statement, one round trip). Returns the events recorded.
 *
 * The feed pages by `seq`, so a reseller's events must commit in `seq` order. SQLite's writers
 * take turns already. On PostgreSQL, which hands out identity values before commit, a deferred
 * trigger renumbers the events at commit, under the reseller's advisory lock (migration 014):
 * transactions take turns only for their commits, and only one reseller's.
 */
export async function recordEvents(
  db: Kysely<Database>,
  resellerId: string,
  events: readonly NewEvent[],
  now: number,
): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  const rows = eventRows(resellerId, events, now);
  await writeEventRows(db, resellerId, rows, now);
  return rows.map(toEvent);
}

async function writeEventRows(
  db: Kysely<Database>,
  resellerId: string,
  rows: readonly EventRow[],
  now: number,
): Promise<void> {
  if (rows.length === 0) return;
  if (dialectOf(db) === 'postgres') {
    await db.executeQuery(CompiledQuery.raw(eventsAndDeliveriesSql(rows.length), eventValues(rows)));
    return;
  }
  await insertRows(db, 'events', rows);
  const hooks = await webhookSubscriptions(db, resellerId);
  const deliveries: DeliveryKey[] = [];
  for (const hook of hooks) {
    for (const row of rows)
      if (receives(hook, row.type)) deliveries.push({ webhookId: hook.id, eventId: row.id });
  }
  if (deliveries.length > 0) await enqueueDeliveries(db, deliveries, now);
}

type EventRow = Omit<EventTable, 'seq'>;

function eventRows(resellerId: string, events: readonly NewEvent[], now: number): EventRow[] {
  return events.map((e) => ({
    id: nextEventId(now),
    reseller_id: resellerId,
    type: e.type,
    data: JSON.stringify(e.data),
    created_at: now,
  }));
}

/** An event's five values (id, reseller_id, type, data, created_at), in the order the texts take them. */
const eventTuple = (r: EventRow) => [r.id, r.reseller_id, r.type, r.data, r.created_at];

/** Five values per event (eventTuple), one event after another. */
const eventValues = (rows: readonly EventRow[]) => rows.flatMap(eventTuple);

/**
 * The insert of a delivery for each event of `events` (a relation `ev` of `id, type`) and each
 * webhook of the reseller (`reseller`, an expression: a parameter, or the event's column) that
 * wants it: all types when `event_types` is null, else the JSON array names the type (the rule of
 * `receives`). Queued at `at` (an expression too).
 */
const deliveriesSql = (events: string, reseller: string, at: string) =>
  'insert into webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, created_at) ' +
  `select w.id, ev.id, 'pending', 0, ${at}, ${at} from ${events} ev join webhooks w on w.reseller_id = ${reseller} ` +
  'where w.event_types is null or w.event_types::jsonb ? ev.type';

/**
 * PostgreSQL's recordEvents in one round trip: the events inserted, then their deliveries
 * (deliveriesSql). Parameters: five per event (eventValues), so $2 is the reseller and $5 the
 * time. Texts by number of events, built once, and sent by name (pg-named.ts).
 */
const eventsAndDeliveriesTexts = new Map<number, string>();
function eventsAndDeliveriesSql(events: number): string {
  let text = eventsAndDeliveriesTexts.get(events);
  if (text === undefined) {
    const tuples = Array.from({ length: events }, (_, i) => {
      const p = i * 5;
      return `($${p + 1}, $${p + 2}, $${p + 3}, $${p + 4}, $${p + 5})`;
    });
    text =
      `with ev as (insert into events (id, reseller_id, type, data, created_at) values ${tuples.join(', ')} ` +
      `returning id, type) ${deliveriesSql('ev', '$2', '$5')}`;
    eventsAndDeliveriesTexts.set(events, text);
    nameStatement(text);
  }
  return text;
}

/**
 * A reseller's events recorded with a guarded change (store/gated-write.ts): recorded, with their
 * deliveries, only if the guard changed a row. On PostgreSQL each event is an INSERT ... SELECT
 * (its parameters then take the columns' types) and the deliveries are inserted for all of them
 * by the rule of recordEvents; in a statement of several guarded writes written with arrays,
 * one insert takes all their events (`rows`), each event's deliveries by its own reseller.
 * Elsewhere they are written as recordEvents writes them, after the guard.
 */
export function gatedEvents(resellerId: string, events: readonly NewEvent[], now: number): GatedPart {
  const rows = eventRows(resellerId, events, now);
  return {
    shape: `events x${rows.length}`,
    values: eventValues(rows),
    cte(gate, name, first) {
      if (rows.length === 0) return `${name} as (select from ${gate} where false)`;
      const inserts = rows.map((_, i) => {
        const p = first + i * 5;
        return (
          `${name}e${i} as (insert into events (id, reseller_id, type, data, created_at) ` +
          `select $${p}, $${p + 1}, $${p + 2}, $${p + 3}, $${p + 4} where exists (select from ${gate}) ` +
          'returning id, type)'
        );
      });
      const all = rows.map((_, i) => `select id, type from ${name}e${i}`).join(' union all ');
      return `${inserts.join(', ')}, ${name} as (${deliveriesSql(`(${all})`, `$${first + 1}`, `$${first + 4}`)})`;
    },
    run: (tx) => writeEventRows(tx, resellerId, rows, now),
    // Inserts only (the events and their deliveries).
    updates: [],
    rows: {
      table: 'events',
      columns: ['id', 'reseller_id', 'type', 'data', 'created_at'],
      rows: rows.map(eventTuple),
      // Each event's deliveries by its own reseller and time: the writes of one statement may be
      // different resellers'.
      cte: (name, gate, source) =>
        `${name}e as (insert into events (id, reseller_id, type, data, created_at) ` +
        `select v.c0, v.c1, v.c2, v.c3, v.c4 from ${source} where v.w in (select w from ${gate}) ` +
        `returning id, type, reseller_id, created_at), ` +
        `${name} as (${deliveriesSql(`${name}e`, 'ev.reseller_id', 'ev.created_at')})`,
    },
  };
}

/**
 * The reseller's events after the event `after` (from the first kept if undefined), oldest
 * first, in commit order (see recordEvents): a client that pages with the last id it got never
 * misses an event. Undefined when `after` is not one of the reseller's events (unknown, another
 * reseller's, or pruned).
 */
export async function listEvents(
  db: Kysely<Database>,
  resellerId: string,
  after: string | undefined,
  limit: number,
): Promise<StoredEvent[] | undefined> {
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
    .select(['id', 'type', 'data', 'created_at'])
    .where('reseller_id', '=', resellerId)
    .where('seq', '>', afterSeq)
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
