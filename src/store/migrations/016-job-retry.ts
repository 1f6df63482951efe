import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * An operator retries a failed job at most once: `jobs.retry_job_id` is the id of the job that
 * retry queued (null until then). The retry sets it in the transaction that queues the new job,
 * only where it is still null (a compare-and-set), so concurrent retries of one job make one job
 * and the others are told which (409 `job_already_retried`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('retry_job_id', 'text').execute();
}
