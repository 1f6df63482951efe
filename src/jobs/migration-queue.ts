import type { Kysely, Transaction } from 'kysely';
import { ApiError } from '../domain/errors.ts';
import type { AuditContext } from '../store/repos/audit.ts';
import type { Job } from '../store/repos/jobs.ts';
import type { Database } from '../store/schema.ts';
import { enqueueInTransaction, inSeqTransaction } from './queue.ts';

/** What queueing a migration needs: the store, the time, and who asks (none for an evacuation's own). */
export interface MigrationQueueDeps {
  readonly db: Kysely<Database>;
  readonly now: number;
  readonly audit?: AuditContext;
}

export interface MigrationRequest {
  /** The destination, or null for the placement rule's choice. */
  readonly hostId: string | null;
  /** Queued by an evacuation. */
  readonly evacuation: boolean;
}

/**
 * Queues a migration of a service (the operator's `POST OPS/services/{id}/migrate`, and each move
 * of an evacuation): checked against the service's projected status like any request (400
 * `invalid_state` unless it is running, stopped or suspended once its queued jobs have run),
 * queued behind the service's other jobs, with the host the service is on now as `from_host_id`.
 */
export function queueMigration(
  deps: MigrationQueueDeps,
  serviceId: string,
  req: MigrationRequest,
): Promise<Job> {
  return inSeqTransaction(deps.db, (tx) => queueMigrationIn(tx, serviceId, req, deps.now, deps.audit));
}

/**
 * The body of queueMigration, in the caller's transaction (the evacuator counts and queues in one).
 * Throws SeqConflict (jobs/queue.ts) when a concurrent request won; the caller runs it again.
 */
export async function queueMigrationIn(
  tx: Transaction<Database>,
  serviceId: string,
  req: MigrationRequest,
  now: number,
  audit?: AuditContext,
): Promise<Job> {
  const service = await tx
    .selectFrom('services')
    .select(['reseller_id', 'host_id'])
    .where('id', '=', serviceId)
    .executeTakeFirst();
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  const outcome = await enqueueInTransaction(
    tx,
    {
      action: 'migrate',
      params: { host_id: req.hostId, from_host_id: service.host_id, evacuation: req.evacuation },
      resellerId: service.reseller_id,
      serviceId,
      audit,
    },
    now,
  );
  // A migration is never a repeat with nothing to do (no status is its target).
  if (outcome.kind !== 'queued') throw new ApiError('invalid_state', outcome.message);
  return outcome.job;
}
