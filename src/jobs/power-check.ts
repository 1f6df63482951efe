import type { FastifyBaseLogger } from 'fastify';
import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { statusCorrected } from '../domain/events.ts';
import {
  type Correction,
  correctionKind,
  type ObservedPower,
  powerCorrection,
} from '../domain/power-drift.ts';
import type { ServiceError } from '../domain/service-error.ts';
import { type JobAction, project, type StableStatus } from '../domain/status-machine.ts';
import type { HypervisorDriver } from '../drivers/driver.ts';
import type { PowerMetrics } from '../metrics.ts';
import type { DialectFeatures } from '../store/database.ts';
import { recordEvents } from '../store/repos/events.ts';
import { queuedActions } from '../store/repos/jobs.ts';
import { type Service, serviceErrorColumns } from '../store/repos/services.ts';
import type { Database } from '../store/schema.ts';

/** What applying a correction needs: the store, the hypervisor, and where to tell it. */
export interface PowerCheckDeps {
  readonly db: Kysely<Database>;
  readonly driver: HypervisorDriver;
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  readonly metrics?: PowerMetrics;
}

/** What a status correction records as the service's error: why it is failed now, or none. */
function errorAfter(c: Extract<Correction, { kind: 'status' }>): ServiceError | null {
  return c.reason === 'vm_missing' ? { code: 'vm_missing', message: c.message } : null;
}

/** A service as the reconciler read it, before it asked the hypervisor. */
export interface IdleService {
  readonly id: string;
  readonly resellerId: string;
  readonly status: StableStatus;
  /** The service's job sequence when read: any job accepted since moves it (the version). */
  readonly jobSeq: number;
}

/** The service is still as the pass read it: same status and job sequence, no job queued or running. */
function asRead(s: IdleService) {
  return (eb: ExpressionBuilder<Database, 'services'>) =>
    eb.and([
      eb('id', '=', s.id),
      eb('status', '=', s.status),
      eb('job_seq', '=', s.jobSeq),
      eb('pending_jobs', '=', 0),
      eb('active_job_id', 'is', null),
    ]);
}

/** Whether the service is still as it was read: same status and job sequence, no job queued or running. */
export async function stillIdle(db: Kysely<Database>, s: IdleService): Promise<boolean> {
  return (await db.selectFrom('services').select('id').where(asRead(s)).executeTakeFirst()) !== undefined;
}

/**
 * Applies `correction` to a service with no job (the periodic pass), if it is still as it was
 * read: same status, same job sequence (no job accepted since), none queued or running. The
 * check and the change are one conditional update, in the transaction that records the event,
 * so a request or a worker that got there first wins and the service is left alone. A
 * suspended service's running VM is powered off only after the same condition is re-read.
 * Returns whether the correction was made.
 */
export async function correctIdleService(
  deps: PowerCheckDeps,
  s: IdleService,
  correction: Correction,
): Promise<boolean> {
  const { db } = deps;
  if (correction.kind === 'power_off') {
    if (!(await stillIdle(db, s))) return false;
    await powerOffSuspended(deps, s.id, correction.message);
    return true;
  }
  const now = deps.clock.now();
  const done = await db.transaction().execute(async (tx) => {
    const r = await tx
      .updateTable('services')
      .set({
        status: correction.to,
        resume_status: null,
        projected_status: correction.to,
        projected_resume: null,
        // Moved, so that a request that read the service before this commit fails its
        // compare-and-set and is checked again against the correction.
        job_seq: s.jobSeq + 1,
        ...serviceErrorColumns(errorAfter(correction)),
        updated_at: now,
      })
      .where(asRead(s))
      .executeTakeFirst();
    if (r.numUpdatedRows === 0n) return false;
    await recordEvents(
      tx,
      s.resellerId,
      [
        statusCorrected(
          s.id,
          s.status,
          correction.to,
          correction.reason,
          correction.message,
          errorAfter(correction),
        ),
      ],
      now,
    );
    return true;
  });
  if (done) told(deps, s.id, s.status, correction);
  return done;
}

/**
 * The check at the start of a job (before its task runs, on its first attempt): what the
 * hypervisor says of the service's VM now, and the service corrected to it, so the job starts
 * from the truth (a `start` queued behind a job on a VM powered off outside the API runs, a
 * `reset_password` on it leaves it `stopped`). The update is conditional on the service being
 * this job's and of the status read. Returns the service as the job should see it. A
 * hypervisor that does not answer is no reason to hold the job: it is logged and the job runs
 * on the stored state, as it did before. `corrected`: the message of the change made, if any.
 */
export async function checkAtJobStart(
  deps: PowerCheckDeps & { readonly features: Pick<DialectFeatures, 'rowLocks'> },
  job: { readonly id: string; readonly action: JobAction },
  service: Service,
): Promise<{ readonly service: Service; readonly corrected?: string }> {
  const unchanged = { service };
  const stored = service.status;
  if (stored !== 'running' && stored !== 'stopped' && stored !== 'suspended') return unchanged;
  let observed: ObservedPower;
  try {
    const vm = await deps.driver.inspect(service.id);
    observed = vm ? vm.power : 'missing';
  } catch (err) {
    deps.log.warn(
      { serviceId: service.id, jobId: job.id, error: String(err) },
      'power check at job start: the hypervisor did not answer; the job runs on the stored state',
    );
    return unchanged;
  }
  const correction = powerCorrection(stored, observed);
  if (!correction) return unchanged;
  if (correction.kind === 'power_off') {
    await powerOffSuspended(deps, service.id, correction.message).catch((err) =>
      deps.log.warn(
        { serviceId: service.id, jobId: job.id, error: String(err) },
        'power check at job start: could not power the suspended server off',
      ),
    );
    return unchanged;
  }
  const now = deps.clock.now();
  const done = await deps.db.transaction().execute(async (tx) => {
    // The row locked to the commit (PostgreSQL) and the job sequence moved, as at a job's end
    // (run-job.ts): the queue read below then holds every request accepted before, and one
    // accepted meanwhile fails its compare-and-set and is checked again against the correction.
    const current = await tx
      .selectFrom('services')
      .select('job_seq')
      .where('id', '=', service.id)
      .where('status', '=', stored)
      .where('active_job_id', '=', job.id)
      .$if(deps.features.rowLocks, (q) => q.forUpdate())
      .executeTakeFirst();
    if (!current) return false;
    // The job's own action first (it is running, no longer queued), then those behind it.
    const projected = project({ status: correction.to, resume: null }, [
      job.action,
      ...(await queuedActions(tx, service.id)),
    ]);
    const r = await tx
      .updateTable('services')
      .set({
        status: correction.to,
        resume_status: null,
        projected_status: projected.status,
        projected_resume: projected.resume,
        job_seq: current.job_seq + 1,
        ...serviceErrorColumns(errorAfter(correction)),
        updated_at: now,
      })
      .where('id', '=', service.id)
      .where('job_seq', '=', current.job_seq)
      .executeTakeFirst();
    if (r.numUpdatedRows === 0n) return false;
    await recordEvents(
      tx,
      service.resellerId,
      [
        statusCorrected(
          service.id,
          stored,
          correction.to,
          correction.reason,
          correction.message,
          errorAfter(correction),
        ),
      ],
      now,
    );
    return true;
  });
  if (!done) return unchanged;
  told(deps, service.id, stored, correction);
  return {
    service: { ...service, status: correction.to, resumeStatus: null, error: errorAfter(correction) },
    corrected: correction.message,
  };
}

/** Logs and counts a status correction once it is committed. */
function told(deps: PowerCheckDeps, serviceId: string, from: StableStatus, c: Correction): void {
  if (c.kind !== 'status') return;
  deps.log.warn({ serviceId, from, to: c.to, reason: c.reason }, `power state corrected: ${c.message}`);
  deps.metrics?.corrected(correctionKind(c));
}

async function powerOffSuspended(deps: PowerCheckDeps, serviceId: string, message: string): Promise<void> {
  await deps.driver.powerOff(serviceId);
  deps.log.warn({ serviceId, reason: 'suspended_powered_off' }, message);
  deps.metrics?.corrected('suspended_powered_off');
}
