import type { Kysely, Transaction } from 'kysely';
import { ApiError } from '../domain/errors.ts';
import { isStable, project, type ServiceState } from '../domain/status-machine.ts';
import type { DialectFeatures } from '../store/database.ts';
import { type AuditContext, recordAudit } from '../store/repos/audit.ts';
import { deleteBackupRow, setBackupStatus } from '../store/repos/backups.ts';
import { findJobRow } from '../store/repos/job-list.ts';
import { type Job, queuedActions, toJob, toRunnableJob, UnreadableJob } from '../store/repos/jobs.ts';
import { type Service, toService } from '../store/repos/services.ts';
import type { Database } from '../store/schema.ts';
import { SeqConflict } from './queue.ts';

/** What a cancelled job records as its reason; it ends `skipped`, as a job that never ran. */
export const CANCELLED = 'Cancelled by an operator before it ran';

/**
 * Whether an operator can cancel the job: it is queued and no attempt of it began. A job queued
 * again after an attempt that began (its process died, or the attempt failed and is retried)
 * may have changed the server halfway (a VM moved to another host, a disk half made), which only
 * the job's next run finishes or undoes. The rule cancelJob applies, and what the operator API's
 * job views show as `cancellable`.
 */
export function isCancellable(job: Pick<Job, 'status' | 'began'>): boolean {
  return job.status === 'queued' && !job.began;
}

/**
 * Cancels a queued job (the operator's `POST OPS/jobs/{id}/cancel`): the job ends `skipped`
 * with the reason, the service's projected status is rebuilt from the jobs still to run (so the
 * requests accepted next are checked against where the service will really be), what the job's
 * request prepared is undone (a backup being taken is forgotten, a backup being deleted is
 * available again), and the change is audited, all in one transaction. A job that runs already,
 * has begun before (queued again to finish what an attempt began), or has finished is 409
 * `job_not_queued`: a job that began is the driver's, and stopping it halfway would leave the
 * server in an unknown state.
 */
export async function cancelJob(
  db: Kysely<Database>,
  features: DialectFeatures,
  jobId: string,
  audit: AuditContext,
  now: number,
): Promise<{ readonly job: Job; readonly service: Service }> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction().execute((tx) => cancelIn(tx, features, jobId, audit, now));
    } catch (err) {
      if (err instanceof SeqConflict && attempt < 20) continue;
      throw err;
    }
  }
}

async function cancelIn(
  tx: Transaction<Database>,
  features: DialectFeatures,
  jobId: string,
  audit: AuditContext,
  now: number,
): Promise<{ readonly job: Job; readonly service: Service }> {
  // PostgreSQL: the job's row, then the service's, locked in the order a worker's claim and a
  // job's end take them (jobs, then services), so that neither waits for the other in a cycle.
  // A job a worker is claiming now is read once its claim has committed: running.
  const row = features.rowLocks
    ? await tx.selectFrom('jobs').selectAll().where('id', '=', jobId).forUpdate().executeTakeFirst()
    : await findJobRow(tx, jobId);
  if (!row) throw new ApiError('job_not_found', 'Job not found');
  const current = toJob(row);
  if (!isCancellable(current)) {
    throw new ApiError(
      'job_not_queued',
      current.status === 'running'
        ? 'The job is running; only a queued job can be cancelled (wait for it to finish)'
        : current.status !== 'queued'
          ? `The job has finished (${current.status}); only a queued job can be cancelled`
          : `The job has begun (attempt ${current.attempts} did not finish) and is queued to run again; it cannot be cancelled, as its next run finishes or undoes what the attempt changed`,
    );
  }
  // The service's row (PostgreSQL: locked until the end), so a job finishing or a request
  // accepted meanwhile on this service waits for this change, or this one for it.
  let sq = tx.selectFrom('services').selectAll().where('id', '=', row.service_id);
  if (features.rowLocks) sq = sq.forUpdate();
  const serviceRow = await sq.executeTakeFirst();
  if (!serviceRow) throw new ApiError('job_not_found', 'Job not found');
  const service = toService(serviceRow);

  const cancelled = await tx
    .updateTable('jobs')
    .set({ status: 'skipped', error: CANCELLED, finished_at: now })
    .where('id', '=', jobId)
    .where('status', '=', 'queued')
    .executeTakeFirst();
  // A worker claimed it meanwhile: the next attempt reads it running.
  if (cancelled.numUpdatedRows === 0n) throw new SeqConflict();

  const projected = project(await stateBeforeQueue(tx, service), await queuedActions(tx, service.id));
  const updated = await tx
    .updateTable('services')
    .set((eb) => ({
      projected_status: projected.status,
      projected_resume: projected.resume,
      pending_jobs: eb('pending_jobs', '-', 1),
      // Moves the sequence on, so that a request that read the old projection retries (queue.ts).
      job_seq: service.jobSeq + 1,
      updated_at: now,
    }))
    .where('id', '=', service.id)
    .where('job_seq', '=', service.jobSeq)
    .executeTakeFirst();
  if (updated.numUpdatedRows === 0n) throw new SeqConflict();

  await undoPreparations(tx, row, now);
  await recordAudit(
    tx,
    audit,
    { target: { type: 'job', id: jobId }, serviceId: service.id, resellerId: service.resellerId },
    now,
  );
  const jobRow = await findJobRow(tx, jobId);
  if (!jobRow) throw new Error(`job ${jobId} vanished in the transaction that cancelled it`);
  const after = toService(
    await tx.selectFrom('services').selectAll().where('id', '=', service.id).executeTakeFirstOrThrow(),
  );
  const job = toJob(jobRow);
  return { job, service: after };
}

/**
 * Where the service will be once the job running now (if any) succeeds: the state the queued
 * jobs start from. The running job's recorded starting state, else the service's own.
 */
async function stateBeforeQueue(tx: Transaction<Database>, service: Service): Promise<ServiceState> {
  const own: ServiceState = isStable(service.status)
    ? { status: service.status, resume: service.resumeStatus }
    : { status: service.projectedStatus, resume: service.projectedResume };
  if (!service.activeJobId) return own;
  const running = await findJobRow(tx, service.activeJobId);
  if (running?.status !== 'running') return own;
  let from: ServiceState | null = null;
  try {
    from = toRunnableJob(running).from;
  } catch (err) {
    if (!(err instanceof UnreadableJob)) throw err;
  }
  return project(from ?? own, [running.action]);
}

/** What accepting the job wrote besides it (backup-operation.ts), undone. */
async function undoPreparations(
  tx: Transaction<Database>,
  row: { action: string; params: string },
  now: number,
): Promise<void> {
  const params = JSON.parse(row.params) as { backup_id?: string };
  if (!params.backup_id) return;
  if (row.action === 'backup_create') await deleteBackupRow(tx, params.backup_id);
  if (row.action === 'backup_delete') await setBackupStatus(tx, params.backup_id, 'available', now);
}
