import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * A reseller's external billing id: the key the provider's billing system knows the reseller by,
 * carried on each line of the per-service usage CSV. Null until an operator sets it (resellers
 * that exist when this runs keep null); domain/billing-id.ts says what it may hold.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('resellers').addColumn('external_billing_id', 'text').execute();
}
