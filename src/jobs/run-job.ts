import type { Kysely } from 'kysely';
import {
  decide,
  isStable,
  type PowerStatus,
  project,
  type ServiceState,
  type StableStatus,
  statusAfterFailure,
  transitionalStatus,
} from '../domain/status-machine.ts';
import { DriverError } from '../drivers/driver.ts';
import { type Job, queuedActions } from '../store/repos/jobs.ts';
import { findService, type ServicePatch } from '../store/repos/services.ts';
import type { Database } from '../store/schema.ts';
import type { TaskContext, TaskTable } from './task.ts';

export interface RunDeps extends Omit<TaskContext, 'job' | 'service' | 'from'> {
  readonly workerId: string;
  readonly tasks: TaskTable;
  readonly retryBaseMs: number;
  readonly maxAttempts: number;
}

const RETRY_CAP_MS = 5 * 60_000;

/** What happened, for logs and tests. */
export type RunOutcome = 'succeeded' | 'failed' | 'retrying' | 'lost';

/** Lost the lease to another worker (this process was presumed dead): drop the result, the new owner redoes it. */
class LeaseLost extends Error {}

/**
 * Runs one claimed job: re-checks it against the service's actual status (an earlier job may
 * have failed), shows the transitional status, calls the task, and records the outcome and the
 * service's new state in one transaction, guarded by the lease so a job never completes twice.
 */
export async function runJob(deps: RunDeps, job: Job): Promise<RunOutcome> {
  const { db, clock, log } = deps;
  const service = await findService(db, job.serviceId);
  if (!service) return finishFailed(deps, job, 'The service no longer exists', undefined);

  // The state before this job: recorded at its first start, so a retry after a crash sees the same.
  const recorded = job.params['_from'] as ServiceState | undefined;
  const from: ServiceState =
    recorded ??
    (isStable(service.status)
      ? { status: service.status, resume: service.resumeStatus }
      : { status: service.projectedStatus, resume: service.projectedResume });

  const decision = decide(from, job.action);
  if (decision.kind === 'noop') return finish(deps, job, { status: 'succeeded', error: null }, {}, from);
  if (decision.kind === 'invalid') {
    return finishFailed(deps, job, `${decision.message} (an earlier job did not succeed)`, from);
  }

  try {
    await guarded(db, job, deps.workerId, async (tx) => {
      await tx
        .updateTable('jobs')
        .set({ params: JSON.stringify({ ...job.params, _from: from }) })
        .where('id', '=', job.id)
        .execute();
      await tx
        .updateTable('services')
        .set({ status: transitionalStatus(job.action, from.status), updated_at: clock.now() })
        .where('id', '=', service.id)
        .execute();
    });
  } catch (err) {
    if (err instanceof LeaseLost) return 'lost';
    throw err;
  }

  let patch: ServicePatch;
  try {
    patch = await deps.tasks[job.action]({ ...deps, job, service, from });
  } catch (err) {
    const driverError = err instanceof DriverError ? err : undefined;
    if (!driverError) log.error({ err, jobId: job.id, action: job.action }, 'job failed unexpectedly');
    else
      log.warn(
        {
          jobId: job.id,
          action: job.action,
          transient: driverError.transient,
          error: driverError.message,
          details: driverError.details,
        },
        'driver error',
      );
    if (driverError?.transient && job.attempts < deps.maxAttempts)
      return retry(deps, job, from, driverError.message);
    const message = driverError
      ? driverError.message
      : `Internal error while running ${job.action.replaceAll('_', ' ')}`;
    return finishFailed(deps, job, message, from);
  }
  const next = decision.next;
  return finish(
    deps,
    job,
    { status: 'succeeded', error: null },
    { ...patch, resume_status: next.resume },
    next,
  );
}

async function guarded(
  db: Kysely<Database>,
  job: Job,
  workerId: string,
  body: (tx: Kysely<Database>) => Promise<void>,
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const owned = await tx
      .selectFrom('jobs')
      .select('id')
      .where('id', '=', job.id)
      .where('status', '=', 'running')
      .where('locked_by', '=', workerId)
      .executeTakeFirst();
    if (!owned) throw new LeaseLost();
    await body(tx);
  });
}

async function retry(deps: RunDeps, job: Job, from: ServiceState, message: string): Promise<RunOutcome> {
  const now = deps.clock.now();
  const delay = Math.min(RETRY_CAP_MS, deps.retryBaseMs * 2 ** (job.attempts - 1));
  const jittered = Math.round(delay * (0.8 + Math.random() * 0.4));
  try {
    await guarded(deps.db, job, deps.workerId, async (tx) => {
      await tx
        .updateTable('jobs')
        .set({
          status: 'queued',
          run_at: now + jittered,
          error: `Attempt ${job.attempts} failed, retrying: ${message}`,
          locked_by: null,
          locked_until: null,
        })
        .where('id', '=', job.id)
        .execute();
      await tx
        .updateTable('services')
        .set({ status: from.status, active_job_id: null, updated_at: now })
        .where('id', '=', job.serviceId)
        .execute();
    });
  } catch (err) {
    if (err instanceof LeaseLost) return 'lost';
    throw err;
  }
  return 'retrying';
}

async function finishFailed(
  deps: RunDeps,
  job: Job,
  message: string,
  from: ServiceState | undefined,
): Promise<RunOutcome> {
  const after: ServiceState | undefined = from && {
    status: statusAfterFailure(job.action, from.status),
    resume: from.resume,
  };
  return finish(deps, job, { status: 'failed', error: message }, {}, after);
}

/**
 * Records the end of a job and the service's state after it. On failure, the projection the
 * queued requests were accepted against is rebuilt from the real state.
 */
async function finish(
  deps: RunDeps,
  job: Job,
  result: { status: 'succeeded' | 'failed'; error: string | null },
  patch: ServicePatch,
  after: ServiceState | undefined,
): Promise<RunOutcome> {
  const now = deps.clock.now();
  try {
    await guarded(deps.db, job, deps.workerId, async (tx) => {
      await tx
        .updateTable('jobs')
        .set({
          status: result.status,
          error: result.error,
          finished_at: now,
          locked_by: null,
          locked_until: null,
        })
        .where('id', '=', job.id)
        .execute();
      const service = await tx
        .selectFrom('services')
        .select(['pending_jobs', 'projected_status', 'projected_resume'])
        .where('id', '=', job.serviceId)
        .executeTakeFirst();
      if (!service) return;
      const pending = Math.max(0, service.pending_jobs - 1);
      const set: ServicePatch = { ...patch, active_job_id: null, pending_jobs: pending, updated_at: now };
      if (after) {
        set.status = after.status;
        if (patch.resume_status === undefined) set.resume_status = after.resume;
      }
      if (result.status === 'failed' && after) {
        const rest = pending === 0 ? [] : await queuedActions(tx, job.serviceId);
        const projected = project(after, rest);
        set.projected_status = projected.status;
        set.projected_resume = projected.resume;
      } else if (pending === 0 && after) {
        set.projected_status = after.status as StableStatus;
        set.projected_resume = after.resume as PowerStatus | null;
      }
      await tx.updateTable('services').set(set).where('id', '=', job.serviceId).execute();
    });
  } catch (err) {
    if (err instanceof LeaseLost) return 'lost';
    throw err;
  }
  return result.status;
}
