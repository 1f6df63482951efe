import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * `room_claims`: the room a copy under way holds on a place it writes to (a host's storage pool,
 * a worker machine's temporary directory), for the job whose attempt makes it. A copy's check of
 * a place's free room counts what the other copies there hold, so copies started together (an
 * evacuation's moves to one host, run by several worker processes) no longer each see the room
 * the others will take. A claim counts only while its job runs under a lease not yet ended
 * (`jobs.locked_until`): one whose process died stops counting when its lease runs out, with
 * nothing to clear (src/drivers/room-claims.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('room_claims')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('place', 'text', (c) => c.notNull())
    .addColumn('bytes', 'bigint', (c) => c.notNull())
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('room_claims_place').on('room_claims').column('place').execute();
  await db.schema.createIndex('room_claims_job').on('room_claims').column('job_id').execute();
}
