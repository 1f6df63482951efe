import type { Kysely, Transaction } from 'kysely';
import { ApiError } from '../domain/errors.ts';
import { type AuditContext, systemPart } from '../store/repos/audit.ts';
import { checkMigrationDestination, type HostDriver } from '../store/repos/hosts.ts';
import type { Job } from '../store/repos/jobs.ts';
import { findService } from '../store/repos/services.ts';
import type { Database } from '../store/schema.ts';
import { enqueueInTransaction, requestOperation } from './queue.ts';

/**
 * Queues an operator's migration of a service to `toHostId` (null: the host the placement rule
 * picks), as the operator API and the CLI both do: checked like any request against the
 * service's projected status (400 `invalid_state` unless it is running, stopped or suspended
 * once its queued jobs have run; a suspended one moves cold), and the destination checked in the
 * same transaction (checkMigrationDestination: 404 `host_not_found`, 400 `same_host`,
 * `host_not_active`, `host_unreachable`). The job's params name the host the service is on now.
 */
export async function requestMigration(
  db: Kysely<Database>,
  processDriver: HostDriver,
  serviceId: string,
  toHostId: string | null,
  audit: AuditContext | undefined,
  now: number,
): Promise<Job> {
  const service = await findService(db, serviceId);
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  const from = service.hostId;
  const outcome = await requestOperation(
    db,
    {
      resellerId: service.resellerId,
      serviceId: service.id,
      audit,
      action: 'migrate',
      params: { host_id: toHostId, from_host_id: from, evacuation: false },
      check: async (current, tx) => {
        if (current.hostId !== from)
          throw new ApiError('invalid_state', 'The server moved meanwhile: ask for the migration again');
        if (toHostId !== null) await checkMigrationDestination(tx, processDriver, from, toHostId);
      },
    },
    now,
  );
  // A migration is never a repeat with nothing to do (no status is its target).
  if (outcome.kind === 'noop') throw new ApiError('invalid_state', outcome.message);
  return outcome.job;
}

/**
 * An evacuation's move of a service, in the caller's transaction (the evacuator counts and
 * queues in one): the destination is the placement rule's.
 * Throws SeqConflict (jobs/queue.ts) when a concurrent request won; the caller runs it again.
 */
export async function queueMigrationIn(
  tx: Transaction<Database>,
  serviceId: string,
  now: number,
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
      params: { host_id: null, from_host_id: service.host_id, evacuation: true },
      resellerId: service.reseller_id,
      serviceId,
      startedBy: systemPart('evacuation'),
    },
    now,
  );
  if (outcome.kind !== 'queued') throw new ApiError('invalid_state', outcome.message);
  return outcome.job;
}
