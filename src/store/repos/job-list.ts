import type { Kysely } from 'kysely';
import type { Database, JobStatus, JobTable } from '../schema.ts';
import { type Job, toJob } from './jobs.ts';

/** What the operator's jobs list filters by, and where its page starts. */
export interface JobListQuery {
  readonly status?: JobStatus;
  readonly serviceId?: string;
  /** The key of the last job of the previous page: this page goes on after it. */
  readonly before?: { readonly createdAt: number; readonly id: string };
  readonly limit: number;
}

/**
 * Jobs across resellers, newest first by (created_at, id): a job's creation time never changes,
 * so a page ends at a key that new jobs (which sort before it) do not move. One status is a range
 * of `jobs_status_created` (status, created_at, id; migration 009); one service's jobs are few
 * (`jobs_service_seq`).
 */
export async function listJobsPage(db: Kysely<Database>, query: JobListQuery): Promise<Job[]> {
  let q = db.selectFrom('jobs').selectAll();
  if (query.status !== undefined) q = q.where('status', '=', query.status);
  if (query.serviceId !== undefined) q = q.where('service_id', '=', query.serviceId);
  const before = query.before;
  if (before) {
    q = q.where((eb) =>
      eb.or([
        eb('created_at', '<', before.createdAt),
        eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)]),
      ]),
    );
  }
  const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
  return rows.map(toJob);
}

/** A job's row, whatever its reseller (the operator's view). */
export async function findJobRow(db: Kysely<Database>, id: string): Promise<JobTable | undefined> {
  return db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** How many jobs of `status` were created at or after `since` (a range of `jobs_status_created`). */
export async function countJobs(db: Kysely<Database>, status: JobStatus, since = 0): Promise<number> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('status', '=', status)
    .where('created_at', '>=', since)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
