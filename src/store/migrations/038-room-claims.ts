import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * `room_claims`: the room a copy under way holds on a place it writes to (a host's storage pool,
 * a worker machine's temporary directory), for the job attempt that makes it. A copy's check of
 * a place's free room counts what the other copies there hold, so copies started together (an
 * evacuation's moves to one host, run by several worker processes) no longer each see the room
 * the others will take. A claim is one attempt's of its job (`attempt`: `jobs.attempts` as that
 * attempt's claim set it) and is under way only while that attempt runs under a lease not yet
 * ended (`jobs.locked_until`): one whose process died is over when its lease runs out, or when
 * the job's next attempt begins, with nothing to clear. A claim over (`released_at`: its copy
 * ended, or its run did) still counts for a check whose free figure may not show the copy's
 * bytes: one read before it ended, or the last figure libvirt kept of a pool a copy holds. It
 * goes once a figure of its place read afresh well after it ended shows them (`room_places`:
 * each place's last fresh read) (src/drivers/libvirt/room-claims.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('room_claims')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('place', 'text', (c) => c.notNull())
    .addColumn('bytes', 'bigint', (c) => c.notNull())
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('released_at', 'bigint')
    .execute();
  await db.schema.createIndex('room_claims_place').on('room_claims').column('place').execute();
  await db.schema
    .createTable('room_places')
    .addColumn('place', 'text', (c) => c.primaryKey())
    .addColumn('fresh_at', 'bigint', (c) => c.notNull())
    .execute();
}
