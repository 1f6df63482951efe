import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * A covering index for status polls (the API's most frequent request): the status of a
 * reseller's service is read from the index alone, one B-tree probe instead of two (the primary
 * key, then the row), which keeps a status read as cheap with a million services as with a
 * thousand. Led by reseller_id, it also serves what `services_reseller` (reseller_id,
 * created_at) did, the foreign key to resellers and a reseller's services in id order (ids are
 * time-ordered UUIDv7), so that index goes: one B-tree fewer to write per order.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('services_status')
    .on('services')
    .columns(['reseller_id', 'id', 'status', 'projected_status', 'projected_resume', 'pending_jobs'])
    .execute();
  await db.schema.dropIndex('services_reseller').execute();
}
