import type { Kysely } from 'kysely';
import type { Database, JobStatus, JobTable } from '../schema.ts';
import { type Job, toJob } from './jobs.ts';

/** What the operator's jobs list filters by, and where its page starts. */
export interface JobListQuery {
  readonly status?: JobStatus;
  readonly serviceId?: string;
  /**
   * Leave out failed jobs already retried: one an operator retried (its `retry_job_id` is set),
   * or one a later job of the same service and action succeeded after.
   */
  readonly hideRetried?: boolean;
  /** The key of the last job of the previous page: this page goes on after it. */
  readonly before?: { readonly createdAt: number; readonly id: string };
  readonly limit: number;
}

/** A job in the operator's list, with what people know its service and reseller by. */
export interface ListedJob extends Job {
  /** The service's domain; empty if its record is gone. */
  readonly domain: string;
  readonly resellerName: string;
}

/**
 * Jobs across resellers, newest first by (created_at, id): a job's creation time never changes,
 * so a page ends at a key that new jobs (which sort before it) do not move. One status is a range
 * of `jobs_status_created` (status, created_at, id; migration 009); one service's jobs are few
 * (`jobs_service_seq`), which is also where whether a failure was retried is looked up.
 */
export async function listJobsPage(db: Kysely<Database>, query: JobListQuery): Promise<ListedJob[]> {
  let q = db
    .selectFrom('jobs as j')
    .leftJoin('services as s', 's.id', 'j.service_id')
    .leftJoin('resellers as r', 'r.id', 'j.reseller_id')
    .selectAll('j')
    .select(['s.domain_name', 'r.name as reseller_name']);
  if (query.status !== undefined) q = q.where('j.status', '=', query.status);
  if (query.serviceId !== undefined) q = q.where('j.service_id', '=', query.serviceId);
  if (query.hideRetried) {
    q = q.where((eb) =>
      eb.or([
        eb('j.status', '!=', 'failed'),
        eb.and([
          eb('j.retry_job_id', 'is', null),
          eb.not(
            eb.exists(
              eb
                .selectFrom('jobs as later')
                .select('later.id')
                .whereRef('later.service_id', '=', 'j.service_id')
                .whereRef('later.action', '=', 'j.action')
                .whereRef('later.seq', '>', 'j.seq')
                .where('later.status', '=', 'succeeded'),
            ),
          ),
        ]),
      ]),
    );
  }
  const before = query.before;
  if (before) {
    q = q.where((eb) =>
      eb.or([
        eb('j.created_at', '<', before.createdAt),
        eb.and([eb('j.created_at', '=', before.createdAt), eb('j.id', '<', before.id)]),
      ]),
    );
  }
  const rows = await q.orderBy('j.created_at', 'desc').orderBy('j.id', 'desc').limit(query.limit).execute();
  return rows.map((r) => ({ ...toJob(r), domain: r.domain_name ?? '', resellerName: r.reseller_name ?? '' }));
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
