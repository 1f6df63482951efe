import type { Kysely } from 'kysely';
import { ApiError } from '../domain/errors.ts';
import type { Catalog } from '../store/catalog-cache.ts';
import type { DialectFeatures } from '../store/database.ts';
import type { AuditContext } from '../store/repos/audit.ts';
import { findJobRow } from '../store/repos/job-list.ts';
import { type RunnableJob, toRunnableJob, UnreadableJob } from '../store/repos/jobs.ts';
import type { Database } from '../store/schema.ts';
import { backupCreateOperation, backupDeleteOperation, backupRestoreOperation } from './backup-operation.ts';
import { type Operation, type OperationOutcome, requestOperation } from './queue.ts';
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
    default:
      return { action: job.action };
  }
}

/**
 * Retries a failed job (the operator's `POST OPS/jobs/{id}/retry`): queues its operation again as
 * a new job, for the job's reseller, checked against the service's projected status like any
 * request (400 `invalid_state` if the service no longer accepts it; a target reached meanwhile is
 * a no-op). A job that did not fail is 409 `job_not_failed`.
 */
export async function retryJob(
  db: Kysely<Database>,
  deps: { readonly catalog: Catalog; readonly features: DialectFeatures },
  jobId: string,
  audit: AuditContext,
  now: number,
): Promise<OperationOutcome> {
  const row = await findJobRow(db, jobId);
  if (!row) throw new ApiError('job_not_found', 'Job not found');
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
  return requestOperation(
    db,
    {
      ...operation,
      resellerId: job.resellerId,
      serviceId: job.serviceId,
      audit,
      auditTarget: { type: 'job', id: job.id },
    },
    now,
  );
}
