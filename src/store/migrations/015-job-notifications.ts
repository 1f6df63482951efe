import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect-of.ts';

// Released migrations are never edited; add a new numbered file instead.

/**
 * PostgreSQL tells workers in other processes that a job was queued: a job row that
 * becomes `queued` (inserted, retried by an operator) notifies the `vrp_jobs` channel, at
 * its transaction's commit (PostgreSQL delivers notifications then, one per channel and payload
 * per transaction). Workers LISTEN (src/store/job-notifications.ts) and claim at once instead of
 * at their next poll. SQLite has no such channel: its processes poll.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  await sql`
    create function vrp_job_queued_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('vrp_jobs', '');
      return null;
    end
    $$`.execute(db);
  await sql`
    create trigger jobs_queued_notify after insert or update of status on jobs
    for each row when (new.status = 'queued') execute function vrp_job_queued_notify()`.execute(db);
}
