import type { Kysely, Updateable } from 'kysely';
import { createMonotonicUuidv7 } from '../../domain/ids.ts';
import { type JobParams, jobParamsProblem } from '../../domain/job-params.ts';
import type { PasswordApplies } from '../../domain/passwords.ts';
import { isStable, type JobAction, type ServiceState } from '../../domain/status-machine.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import type { KeyedUpdate } from '../gated-write.ts';
import type { HotReads } from '../hot-reads.ts';
import { insertRow } from '../insert-row.ts';
import type { AuditActorType, Database, JobStatus, JobTable, ServiceTable } from '../schema.ts';
import { updateWhere } from '../update-row.ts';
import { type Service, toService } from './services.ts';

export type { JobStatus };

/**
 * Who asked for a job, as the audit log names actors: an operator, a reseller's application, the
 * CLI's user, or the system (`id` and `name`: the part of it that acted, `scheduler`...).
 */
export interface JobStarter {
  readonly type: AuditActorType;
  readonly id: string;
  readonly name: string | null;
}

/** A job as the API shows it: everything but what its task needs to run (see RunnableJob). */
export interface Job {
  readonly id: string;
  readonly serviceId: string;
  readonly resellerId: string;
  readonly action: JobAction;
  readonly status: JobStatus;
  readonly error: string | null;
  readonly attempts: number;
  /**
   * An attempt of it began: it recorded the service's state it started from (`from_state`). A
   * queued job that began is queued again to finish, or undo, what that attempt changed.
   */
  readonly began: boolean;
  readonly seq: number;
  readonly runAt: number;
  readonly createdAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  readonly lockedBy: string | null;
  /** What the finished job reports beyond its status (a password reset: when it applies). */
  readonly result: JobResult | null;
  /** A failed job an operator retried: the job that retry queued (a job is retried at most once). */
  readonly retryJobId: string | null;
  /** Who asked for it; null for jobs queued before this was recorded. */
  readonly startedBy: JobStarter | null;
}

/** What a finished job may report (jobs.result, migrations/012). */
export interface JobResult {
  readonly password_applies?: PasswordApplies;
}

/** A job of one action, with that action's parameters. */
export interface JobOf<A extends JobAction> extends Job {
  readonly action: A;
  readonly params: JobParams[A];
  /** Recorded by the task before a step that must not be repeated; read back when the job re-runs. */
  readonly stepMarker: string | null;
  /** The service's state when the job first started (recorded then, so a re-run sees the same). */
  readonly from: ServiceState | null;
}

/** A job with its parameters, checked against its action when read: what a worker runs. */
export type RunnableJob = { [A in JobAction]: JobOf<A> }[JobAction];

/** A stored job whose parameters or recorded state do not fit its action: it cannot run. */
export class UnreadableJob extends Error {
  override name = 'UnreadableJob';
  readonly job: Job;
  constructor(job: Job, problem: string) {
    super(`The stored parameters of this ${job.action.replaceAll('_', ' ')} job are invalid: ${problem}`);
    this.job = job;
  }
}

export function toJob(r: JobTable): Job {
  return {
    id: r.id,
    serviceId: r.service_id,
    resellerId: r.reseller_id,
    action: r.action,
    status: r.status,
    error: r.error,
    attempts: r.attempts,
    began: r.from_state !== null,
    seq: r.seq,
    runAt: r.run_at,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    lockedBy: r.locked_by,
    result: r.result === null ? null : (parseJson(r.result) as JobResult),
    retryJobId: r.retry_job_id,
    startedBy:
      r.started_by_type === null || r.started_by_id === null
        ? null
        : { type: r.started_by_type, id: r.started_by_id, name: r.started_by_name },
  };
}

/** The job with its parameters; throws UnreadableJob if its stored parameters do not fit its action. */
export function toRunnableJob(r: JobTable): RunnableJob {
  const summary = toJob(r);
  const params = parseJson(r.params);
  const problem = params === undefined ? 'the parameters are not JSON' : jobParamsProblem(r.action, params);
  if (problem) throw new UnreadableJob(summary, problem);
  const from = r.from_state === null ? null : toServiceState(parseJson(r.from_state));
  if (from === undefined) throw new UnreadableJob(summary, `the recorded state ${r.from_state} is not one`);
  // Checked just above against the schema of r.action.
  return { ...summary, params, from, stepMarker: r.step_marker } as RunnableJob;
}

/**
 * A job a worker claimed: `read()` gives it with its parameters, or throws UnreadableJob;
 * `service` is its service as the claim left it (the claim's own write of it returns it, so the
 * job need not read it again).
 */
export interface ClaimedJob extends Job {
  read(): RunnableJob;
  readonly service: Service | undefined;
}

export function toClaimedJob(r: JobTable, service: ServiceTable | undefined): ClaimedJob {
  return { ...toJob(r), read: () => toRunnableJob(r), service: service && toService(service) };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function toServiceState(v: unknown): ServiceState | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { status, resume } = v as Record<string, unknown>;
  if (typeof status !== 'string' || !isStable(status)) return undefined;
  if (resume !== null && resume !== 'running' && resume !== 'stopped') return undefined;
  return { status, resume };
}

/** What a new job row needs; the rest starts empty. */
export interface NewJob<A extends JobAction> {
  readonly id: string;
  readonly serviceId: string;
  readonly resellerId: string;
  readonly action: A;
  readonly params: JobParams[A];
  readonly seq: number;
  readonly now: number;
  /** A job `skipped` at once records why a request made no job (a scheduled slot); it never runs. */
  readonly skipped?: { readonly reason: string };
  /** Who asked for it. */
  readonly startedBy?: JobStarter | null;
}

/**
 * The row of a new job: the one place jobs are built, so every job's parameters are checked
 * against its action before they are stored. Parameters of the wrong shape are a programming
 * error (the routes and the scheduler build them), so they throw a plain Error, not an ApiError.
 */
export function newJobRow<A extends JobAction>(j: NewJob<A>): JobTable {
  const problem = jobParamsProblem(j.action, j.params);
  if (problem) throw new Error(`Parameters of a ${j.action} job do not fit: ${problem}`);
  return {
    id: j.id,
    service_id: j.serviceId,
    reseller_id: j.resellerId,
    action: j.action,
    params: JSON.stringify(j.params),
    status: j.skipped ? 'skipped' : 'queued',
    error: j.skipped ? j.skipped.reason : null,
    attempts: 0,
    seq: j.seq,
    run_at: j.now,
    created_at: j.now,
    started_at: null,
    finished_at: j.skipped ? j.now : null,
    locked_by: null,
    locked_until: null,
    step_marker: null,
    from_state: null,
    result: null,
    retry_job_id: null,
    started_by_type: j.startedBy?.type ?? null,
    started_by_id: j.startedBy?.id ?? null,
    started_by_name: j.startedBy?.name ?? null,
  };
}

/**
 * A new job's id: a UUIDv7 (domain/ids.ts), so that the jobs' primary-key index, the store's
 * busiest, grows at its end instead of at a random page (as the events' and the audit's do).
 */
export const newJobId = createMonotonicUuidv7(() => randomPoolBytes(16));

/** Inserts a new job; returns it. */
export async function insertJob<A extends JobAction>(db: Kysely<Database>, j: NewJob<A>): Promise<Job> {
  const row = newJobRow(j);
  await insertRow(db, 'jobs', row);
  return toJob(row);
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
  return rows.map((r) => r.action);
}

/** The state a job started from (see JobOf.from), as its row holds it. */
export function jobFromColumn(from: ServiceState): { from_state: string } {
  return { from_state: JSON.stringify(from) };
}

/** A claim of a job: the job, the worker that claimed it, and the attempt the claim counted. */
export interface JobClaim {
  readonly id: string;
  readonly workerId: string;
  readonly attempts: number;
}

/**
 * Writes to a job's row only while the claim holds (running, locked by that worker, at that
 * attempt): false when another worker took it over or recovery put it back in the queue, also
 * when the same worker claimed it again since (a run whose lease ran out while its process was
 * cut off from the store, beside the run of its new claim). One statement, the ownership check
 * included: on PostgreSQL the update waits for a concurrent writer of the row and checks
 * ownership again after it, so the check holds until the transaction commits.
 */
export async function updateOwnedJob(
  db: Kysely<Database>,
  claim: JobClaim,
  set: Updateable<JobTable>,
): Promise<boolean> {
  const r = await updateWhere(db, 'jobs', set, ownedBy(claim));
  return r.updated === 1;
}

/** The write of updateOwnedJob, as the guard of writes that belong to it (store/gated-write.ts). */
export function ownedJob(claim: JobClaim, set: Updateable<JobTable>): KeyedUpdate<'jobs'> {
  return { table: 'jobs', set, where: ownedBy(claim) };
}

/** A job's row while the claim holds: running, locked by that worker, at that attempt. */
const ownedBy = (c: JobClaim) => ({
  id: c.id,
  status: 'running' as const,
  locked_by: c.workerId,
  attempts: c.attempts,
});

/**
 * Records that a failed job was retried as `retryJobId`, if no retry was recorded yet: one
 * conditional update (a compare-and-set), so of concurrent retries only one records its job; on
 * PostgreSQL a second writer waits for the first's commit and then finds the column set. False
 * when another retry was first (or the job is not a failed one).
 */
export async function markRetried(db: Kysely<Database>, jobId: string, retryJobId: string): Promise<boolean> {
  const r = await db
    .updateTable('jobs')
    .set({ retry_job_id: retryJobId })
    .where('id', '=', jobId)
    .where('status', '=', 'failed')
    .where('retry_job_id', 'is', null)
    .executeTakeFirst();
  return r.numUpdatedRows === 1n;
}
