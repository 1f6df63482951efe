import type { Kysely } from 'kysely';
import { ApiError } from '../domain/errors.ts';
import type { Catalog } from '../store/catalog-cache.ts';
import type { DialectFeatures } from '../store/database.ts';
import type { AuditContext } from '../store/repos/audit.ts';
import { findJobRow } from '../store/repos/job-list.ts';
import { markRetried, type RunnableJob, toRunnableJob, UnreadableJob } from '../store/repos/jobs.ts';
import type { Database } from '../store/schema.ts';
import { backupCreateOperation, backupDeleteOperation, backupRestoreOperation } from './backup-operation.ts';
import {
  enqueueInTransaction,
  inSeqTransaction,
  type Operation,
  type OperationOutcome,
  SeqConflict,
} from './queue.ts';
import { upgradeOperation } from './upgrade-operation.ts';

/**
 * The operation a failed job asked for, as a new request would ask it: the same action and
 * parameters, through the same checks (an upgrade's bounds and quota, a backup that must still
 * exist). A backup is taken anew, with an id of its own, the failed one's record staying failed.
 */
function operationOf(job: RunnableJob, catalog: Catalog, features: DialectFeatures, now: number): Operation {
  switch (job.action) {
    case 'upgrade':
      return upgradeOperation(catalog, features, job.params);
    case 'backup_create':
      return backupCreateOperation(job.params.kind);
    case 'backup_restore':
      return backupRestoreOperation(job.params.backup_id);
    case 'backup_delete':
      return backupDeleteOperation(job.params.backup_id, now);
    case 'suspend':
      return { action: 'suspend', params: job.params };
    case 'reset_password':
      return { action: 'reset_password', params: job.params };
    case 'migrate':
      return { action: 'migrate', params: job.params };
    case 'reinstall':
      return { action: 'reinstall', params: job.params };
    case 'rescue':
      return { action: 'rescue', params: job.params };
    case 'unrescue':
      return { action: 'unrescue', params: job.params };
    default:
      return { action: job.action };
  }
}

/** 409 `job_already_retried`: the job was retried before; the envelope names the job that retry queued. */
function alreadyRetried(retryJobId: string): ApiError {
  return new ApiError(
    'job_already_retried',
    `This job was retried already, as job ${retryJobId}; retry that one if it failed`,
    { fields: { retry_job_id: retryJobId } },
  );
}

/**
 * Retries a failed job (the operator's `POST OPS/jobs/{id}/retry`): queues its operation again as
 * a new job, for the job's reseller, checked against the service's projected status like any
 * request (400 `invalid_state` if the service no longer accepts it; a target reached meanwhile is
 * a no-op). A job that did not fail is 409 `job_not_failed`.
 *
 * A job is retried at most once: the new job's id is recorded on the failed one in the
 * transaction that queues it, by a compare-and-set, so that of concurrent retries exactly one
 * queues a job; a later retry (or a concurrent one that lost) is 409 `job_already_retried` with
 * that job's id, and queues nothing. A retry that was a no-op records nothing.
 */
export async function retryJob(
  db: Kysely<Database>,
  deps: { readonly catalog: Catalog; readonly features: DialectFeatures },
  jobId: string,
  audit: AuditContext,
  now: number,
): Promise<OperationOutcome> {
  // Read inside the transaction: one that lost a race on the service's job sequence runs again
  // and finds the winner's retry recorded before it checks the service.
  return inSeqTransaction(db, async (tx) => {
    const row = await findJobRow(tx, jobId);
    if (!row) throw new ApiError('job_not_found', 'Job not found');
    if (row.retry_job_id !== null) throw alreadyRetried(row.retry_job_id);
    if (row.status !== 'failed') {
      throw new ApiError('job_not_failed', `The job is ${row.status}; only a failed job can be retried`);
    }
    let job: RunnableJob;
    try {
      job = toRunnableJob(row);
    } catch (err) {
      if (!(err instanceof UnreadableJob)) throw err;
      throw new ApiError('invalid_state', `${err.message}; it cannot be retried`);
    }
    const operation = operationOf(job, deps.catalog, deps.features, now);
    const outcome = await enqueueInTransaction(
      tx,
      {
        ...operation,
        resellerId: job.resellerId,
        serviceId: job.serviceId,
        audit,
        auditTarget: { type: 'job', id: job.id },
      },
      now,
    );
    if (outcome.kind === 'queued' && !(await markRetried(tx, job.id, outcome.job.id))) {
      // Another retry recorded its job first: this one's job is rolled back with the
      // transaction, and the run again reads the job as that retry left it (409 above).
      throw new SeqConflict();
    }
    return outcome;
  });
}
