import type { Kysely, Updateable } from 'kysely';
import type { JobAction } from '../../domain/status-machine.ts';
import type { HotReads } from '../hot-reads.ts';
import { insertRow } from '../insert-row.ts';
import type { Database, JobTable } from '../schema.ts';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped';

export interface Job {
  readonly id: string;
  readonly serviceId: string;
  readonly resellerId: string;
  readonly action: JobAction;
  readonly params: Record<string, unknown>;
  readonly status: JobStatus;
  readonly error: string | null;
  readonly attempts: number;
  readonly seq: number;
  readonly runAt: number;
  readonly createdAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  readonly lockedBy: string | null;
  /** Recorded by the task before a step that must not be repeated; read back when the job re-runs. */
  readonly stepMarker: string | null;
}

export function toJob(r: JobTable): Job {
  return {
    id: r.id,
    serviceId: r.service_id,
    resellerId: r.reseller_id,
    action: r.action as JobAction,
    params: JSON.parse(r.params) as Record<string, unknown>,
    status: r.status as JobStatus,
    error: r.error,
    attempts: r.attempts,
    seq: r.seq,
    runAt: r.run_at,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    lockedBy: r.locked_by,
    stepMarker: r.step_marker,
  };
}

export async function insertJob(db: Kysely<Database>, row: JobTable): Promise<void> {
  await insertRow(db, 'jobs', row);
}

export async function findJob(db: Kysely<Database>, id: string): Promise<Job | undefined> {
  const row = await db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toJob(row);
}

/** A service's jobs, newest first. */
export async function listServiceJobs(
  db: Kysely<Database>,
  serviceId: string,
  limit: number,
): Promise<Job[]> {
  const rows = await db
    .selectFrom('jobs')
    .selectAll()
    .where('service_id', '=', serviceId)
    .orderBy('seq', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toJob);
}

/** The job that runs now, or else the next one to run: what status and details show. */
export async function currentJob(reads: HotReads, serviceId: string): Promise<Job | undefined> {
  const row = await reads.currentJob(serviceId);
  return row && toJob(row);
}

/** Actions still to run for a service, in order (the running one excluded). */
export async function queuedActions(db: Kysely<Database>, serviceId: string): Promise<JobAction[]> {
  const rows = await db
    .selectFrom('jobs')
    .select('action')
    .where('service_id', '=', serviceId)
    .where('status', '=', 'queued')
    .orderBy('seq')
    .execute();
  return rows.map((r) => r.action as JobAction);
}

export async function updateJob(
  db: Kysely<Database>,
  id: string,
  patch: Updateable<JobTable>,
): Promise<void> {
  await db.updateTable('jobs').set(patch).where('id', '=', id).execute();
}
