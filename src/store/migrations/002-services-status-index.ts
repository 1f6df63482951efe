import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * A covering index for status polls (the API's most frequent request): the service's status
 * is read from the index alone, one B-tree probe instead of two (the primary key, then the row),
 * which is what keeps a status read as cheap with a million services as with a thousand.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('services_status')
    .on('services')
    .columns(['id', 'reseller_id', 'status', 'projected_status', 'projected_resume', 'pending_jobs'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('services_status').execute();
}
