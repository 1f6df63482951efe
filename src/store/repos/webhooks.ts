import type { Kysely, Transaction } from 'kysely';
import { type EventType, isEventType } from '../../domain/events.ts';
import { prepare, slot } from '../prepared.ts';
import type { Database, WebhookTable } from '../schema.ts';
import { type AuditContext, recordAudit } from './audit.ts';

/** A reseller's receiver of events. Its secret stays sealed here; only the sender opens it. */
export interface Webhook {
  readonly id: string;
  readonly resellerId: string;
  readonly url: string;
  /** The event types it receives; null: all of them, also types added later. */
  readonly eventTypes: readonly EventType[] | null;
  readonly secretEnc: string;
  readonly createdAt: number;
}

function parseTypes(text: string | null): readonly EventType[] | null {
  if (text === null) return null;
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed)
    ? parsed.filter((t): t is EventType => typeof t === 'string' && isEventType(t))
    : [];
}

function toWebhook(r: WebhookTable): Webhook {
  return {
    id: r.id,
    resellerId: r.reseller_id,
    url: r.url,
    eventTypes: parseTypes(r.event_types),
    secretEnc: r.secret_enc,
    createdAt: r.created_at,
  };
}

/** Whether the webhook receives events of `type`. */
export function receives(w: Pick<Webhook, 'eventTypes'>, type: EventType): boolean {
  return w.eventTypes === null || w.eventTypes.includes(type);
}

/** What a new webhook is made of. */
export interface NewWebhook {
  readonly id: string;
  readonly resellerId: string;
  readonly url: string;
  readonly eventTypes: readonly EventType[] | null;
  readonly secretEnc: string;
  readonly now: number;
}

export async function insertWebhook(db: Kysely<Database>, w: NewWebhook): Promise<Webhook> {
  const row: WebhookTable = {
    id: w.id,
    reseller_id: w.resellerId,
    url: w.url,
    event_types: w.eventTypes === null ? null : JSON.stringify(w.eventTypes),
    secret_enc: w.secretEnc,
    created_at: w.now,
  };
  await db.insertInto('webhooks').values(row).execute();
  return toWebhook(row);
}

/** The reseller's webhooks, oldest first. */
export async function listWebhooks(db: Kysely<Database>, resellerId: string): Promise<Webhook[]> {
  const rows = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('reseller_id', '=', resellerId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toWebhook);
}

const subscriptionsOf = prepare({ resellerId: slot<string>() }, (db, s) =>
  db.selectFrom('webhooks').select(['id', 'event_types']).where('reseller_id', '=', s.resellerId),
);

/** The reseller's webhooks' ids and types: what recording an event reads (no secret, no URL). */
export async function webhookSubscriptions(
  db: Kysely<Database>,
  resellerId: string,
): Promise<Pick<Webhook, 'id' | 'eventTypes'>[]> {
  const { rows } = await subscriptionsOf.execute(db, { resellerId });
  return rows.map((r) => ({ id: r.id, eventTypes: parseTypes(r.event_types) }));
}

/** Webhooks by id, whoever owns them (the sender's read). */
export async function webhooksById(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, Webhook>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('webhooks').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.id, toWebhook(r)]));
}

/**
 * Takes the reseller row's write lock for the rest of the transaction (a no-op update locks it on
 * PostgreSQL; SQLite's write transactions are serialised already), so that concurrent
 * registrations of one reseller count its webhooks one after the other and the cap holds.
 */
export async function lockResellerForWebhooks(tx: Transaction<Database>, resellerId: string): Promise<void> {
  await tx
    .updateTable('resellers')
    .set((eb) => ({ enabled: eb.ref('enabled') }))
    .where('id', '=', resellerId)
    .execute();
}

/**
 * Deletes the reseller's webhook and its deliveries, and records the audit entry with them;
 * false if it has none by that id.
 */
export async function deleteWebhook(
  db: Kysely<Database>,
  resellerId: string,
  id: string,
  audit: AuditContext,
  now: number,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .deleteFrom('webhooks')
      .where('id', '=', id)
      .where('reseller_id', '=', resellerId)
      .executeTakeFirst();
    if (r.numDeletedRows === 0n) return false;
    await tx.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
    await recordAudit(tx, audit, { target: { type: 'webhook', id }, resellerId }, now);
    return true;
  });
}
