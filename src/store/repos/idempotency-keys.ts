import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** A key is remembered for 24 hours (docs/design/contract.md#idempotency-keys). */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

export interface IdempotencyRecord {
  readonly requestHash: string;
  /** JSON of what the first request created (never secrets: the response is rebuilt from the store). */
  readonly response: string;
  readonly createdAt: number;
}

export async function findIdempotencyKey(
  db: Kysely<Database>,
  resellerId: string,
  key: string,
  now: number,
): Promise<IdempotencyRecord | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response', 'created_at'])
    .where('reseller_id', '=', resellerId)
    .where('key', '=', key)
    .where('created_at', '>', now - IDEMPOTENCY_TTL_MS)
    .executeTakeFirst();
  return row && { requestHash: row.request_hash, response: row.response, createdAt: row.created_at };
}

/** Records a key; a clash with a live key of the same reseller fails with the database's unique violation. */
export async function insertIdempotencyKey(
  db: Kysely<Database>,
  row: { resellerId: string; key: string; requestHash: string; response: string; now: number },
): Promise<void> {
  // An expired key of the same name may be reused.
  await db
    .deleteFrom('idempotency_keys')
    .where('reseller_id', '=', row.resellerId)
    .where('key', '=', row.key)
    .where('created_at', '<=', row.now - IDEMPOTENCY_TTL_MS)
    .execute();
  await db
    .insertInto('idempotency_keys')
    .values({
      reseller_id: row.resellerId,
      key: row.key,
      request_hash: row.requestHash,
      response: row.response,
      created_at: row.now,
    })
    .execute();
}
