import type { Kysely } from 'kysely';
import { ApiError } from '../../domain/errors.ts';
import type { Database, OperatorWebhookTable } from '../schema.ts';
import { type AuditContext, recordAudit } from './audit.ts';
import { addChannel, type Channel, channelsById } from './notifications.ts';

/** The most webhooks the operators may have. */
export const MAX_OPERATOR_WEBHOOKS = 10;

/** An operator webhook: where notification batches are POSTed. Its secret stays sealed here. */
export interface OperatorWebhook {
  readonly id: string;
  readonly url: string;
  readonly secretEnc: string;
  readonly createdAt: number;
}

/** An operator webhook with how sending to it goes. */
export interface OperatorWebhookView extends OperatorWebhook {
  readonly lastSentAt: number | null;
  readonly failedAttempts: number;
  readonly lastError: string | null;
}

function toWebhook(r: OperatorWebhookTable): OperatorWebhook {
  return { id: r.id, url: r.url, secretEnc: r.secret_enc, createdAt: Number(r.created_at) };
}

function withChannel(w: OperatorWebhook, c: Channel | undefined): OperatorWebhookView {
  return {
    ...w,
    lastSentAt: c?.lastSentAt ?? null,
    failedAttempts: c?.attempts ?? 0,
    lastError: c?.lastError ?? null,
  };
}

/** Every operator webhook, oldest first, with its sending state. */
export async function listOperatorWebhooks(db: Kysely<Database>): Promise<OperatorWebhookView[]> {
  const rows = await db
    .selectFrom('operator_webhooks')
    .selectAll()
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const channels = await channelsById(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => withChannel(toWebhook(r), channels.get(r.id)));
}

/** Operator webhooks by id (the flusher's read). */
export async function operatorWebhooksById(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, OperatorWebhook>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('operator_webhooks').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.id, toWebhook(r)]));
}

/**
 * Adds an operator webhook and its channel (which starts after the last batch formed), with the
 * audit entry; 400 `webhook_limit_reached` past MAX_OPERATOR_WEBHOOKS. The count and the insert
 * take turns on the batch row (PostgreSQL: locked to the commit; SQLite's writers take turns).
 */
export async function createOperatorWebhook(
  db: Kysely<Database>,
  w: { readonly id: string; readonly url: string; readonly secretEnc: string },
  audit: AuditContext,
  now: number,
): Promise<OperatorWebhookView> {
  return db.transaction().execute(async (tx) => {
    await tx
      .updateTable('notification_batches')
      .set((eb) => ({ last_batch: eb.ref('last_batch') }))
      .where('id', '=', 'flush')
      .execute();
    const count = await tx
      .selectFrom('operator_webhooks')
      .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
      .executeTakeFirst();
    if (Number(count?.n ?? 0) >= MAX_OPERATOR_WEBHOOKS)
      throw new ApiError(
        'webhook_limit_reached',
        `The operators have at most ${MAX_OPERATOR_WEBHOOKS} webhooks; remove one first`,
      );
    const row: OperatorWebhookTable = { id: w.id, url: w.url, secret_enc: w.secretEnc, created_at: now };
    await tx.insertInto('operator_webhooks').values(row).execute();
    await addChannel(tx, w.id, 'webhook', now);
    await recordAudit(tx, audit, { target: { type: 'operator_webhook', id: w.id } }, now);
    return withChannel(toWebhook(row), undefined);
  });
}

/** Removes an operator webhook and its channel, with the audit entry; false if there is none by that id. */
export async function deleteOperatorWebhook(
  db: Kysely<Database>,
  id: string,
  audit: AuditContext,
  now: number,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx.deleteFrom('operator_webhooks').where('id', '=', id).executeTakeFirst();
    if (r.numDeletedRows === 0n) return false;
    await tx.deleteFrom('notification_channels').where('channel', '=', id).execute();
    await recordAudit(tx, audit, { target: { type: 'operator_webhook', id } }, now);
    return true;
  });
}
