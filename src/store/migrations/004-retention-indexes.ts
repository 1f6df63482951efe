import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Indexes the retention pruner reads (src/jobs/prune.ts): finished jobs by their end, handled
 * schedule slots by their creation. Each batch of the pruner is then an index range, not a scan
 * of the table under the write lock.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('jobs_finished_at').on('jobs').column('finished_at').execute();
  await db.schema.createIndex('schedule_slots_created').on('schedule_slots').column('created_at').execute();
}
