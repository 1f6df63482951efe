import type { Insertable, Kysely, Transaction } from 'kysely';
import { ApiError } from '../domain/errors.ts';
import type { JobParams } from '../domain/job-params.ts';
import { decide, type JobAction, type ServiceState } from '../domain/status-machine.ts';
import { gatedInsert, gatedWriteStandsAlone, writeGated } from '../store/gated-write.ts';
import { insertRow } from '../store/insert-row.ts';
import { prepare, slot } from '../store/prepared.ts';
import { type AuditActor, type AuditContext, auditRow, SYSTEM_ACTOR } from '../store/repos/audit.ts';
import { type Job, newJobId, newJobRow, toJob } from '../store/repos/jobs.ts';
import { type Service, toService } from '../store/repos/services.ts';
import { recordLift, recordSuspension } from '../store/repos/suspensions.ts';
import type { AuditLogTable, Database } from '../store/schema.ts';
import { readTogether } from '../store/statement-batch.ts';

/** At most this many jobs wait (queued, not running) per service (docs/design/contract.md#jobs). */
const MAX_WAITING_JOBS = 10;

/** An operation on some service: the action, its parameters (omissible when it has none) and its checks. */
export type Operation = {
  // biome-ignore lint/complexity/noBannedTypes: `{}` here asks "can the parameters be empty?"
  [A in JobAction]: ({} extends JobParams[A]
    ? { readonly params?: JobParams[A] }
    : { readonly params: JobParams[A] }) & {
    readonly action: A;
    /** Further checks against the service, inside the transaction (quota, bounds...). Throw ApiError to refuse. */
    readonly check?: (service: Service, tx: Transaction<Database>) => Promise<void>;
    /** Further writes that belong to the same change (a backup record...). */
    readonly apply?: (tx: Transaction<Database>, job: Job, service: Service) => Promise<void>;
  };
}[JobAction];

/**
 * An operation on a reseller's service. A request's operation carries its audit context and is
 * recorded in the transaction that accepts it; the scheduler's own backups carry none.
 */
export type OperationRequest = Operation & {
  readonly resellerId: string;
  readonly serviceId: string;
  readonly audit?: AuditContext;
  /** What the audit entry names as acted on, where it is not the service or backup (a retried job). */
  readonly auditTarget?: { readonly type: string; readonly id: string };
  /** Who the job names as having started it, where that is not the audit context's actor (the system's parts). */
  readonly startedBy?: AuditActor;
};

export type OperationOutcome =
  | { readonly kind: 'queued'; readonly job: Job; readonly service: Service }
  | { readonly kind: 'noop'; readonly message: string; readonly service: Service };

/** The state requests are checked against: where the service will be once its accepted jobs succeed. */
export function projectedState(service: Pick<Service, 'projectedStatus' | 'projectedResume'>): ServiceState {
  return { status: service.projectedStatus, resume: service.projectedResume };
}

/** Another request changed the service's job sequence first: retry the transaction. */
export class SeqConflict extends Error {}

/**
 * Accepts an operation: checks it against the projected status, and records the job and the
 * new projection together (so an accepted request is never lost, and a job never exists without
 * the change it belongs to). Concurrent requests on one service are serialised by a
 * compare-and-set on the service's job sequence, which guards the job's insert and the audit
 * entry's (store/gated-write.ts): on PostgreSQL an operation with nothing more to write is then
 * one read and one statement, without a transaction; otherwise one transaction holds it all.
 */
export async function requestOperation(
  db: Kysely<Database>,
  req: OperationRequest,
  now: number,
): Promise<OperationOutcome> {
  if (gatedWriteStandsAlone(db) && !needsTransaction(req))
    return retryOnSeqConflict(() => enqueue(db, req, now, undefined));
  return inSeqTransaction(db, (tx) => enqueueInTransaction(tx, req, now));
}

/**
 * Whether the operation writes more than the projection, the job and its audit entry, or checks
 * the service inside the transaction: its checks and writes need one. Where a guarded write
 * does not stand alone (gatedWriteStandsAlone: SQLite), every operation takes one.
 */
const needsTransaction = (req: OperationRequest) =>
  req.check !== undefined ||
  req.apply !== undefined ||
  req.action === 'suspend' ||
  req.action === 'unsuspend';

/** Runs `body` in a transaction, again (in a new one) each time it throws SeqConflict, up to 20 times. */
export async function inSeqTransaction<T>(
  db: Kysely<Database>,
  body: (tx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  return retryOnSeqConflict(() => db.transaction().execute(body));
}

/** Runs `attempt` again each time it throws SeqConflict, up to 20 times. */
async function retryOnSeqConflict<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (err instanceof SeqConflict && n < 20) continue;
      throw err;
    }
  }
}

/**
 * The body of requestOperation, for callers that own the transaction (the scheduler). Throws
 * SeqConflict when a concurrent change won; the caller retries.
 */
export function enqueueInTransaction(
  tx: Transaction<Database>,
  req: OperationRequest,
  now: number,
): Promise<OperationOutcome> {
  return enqueue(tx, req, now, tx);
}

/**
 * Reads the service, decides, and writes through `db`; `tx`, the transaction `db` is, for an
 * operation that needs one (needsTransaction). Throws SeqConflict when a concurrent change won.
 */
async function enqueue(
  db: Kysely<Database>,
  req: OperationRequest,
  now: number,
  tx: Transaction<Database> | undefined,
): Promise<OperationOutcome> {
  if (!tx && needsTransaction(req)) throw new Error(`a ${req.action} operation needs a transaction`);
  // With the other requests' reads of this turn, on PostgreSQL (statement-batch.ts).
  const [row] = await readTogether(
    db,
    ownedService.compile(db, { id: req.serviceId, resellerId: req.resellerId }),
    req.serviceId,
  );
  if (!row) throw new ApiError('service_not_found', 'Service not found');
  const service = toService(row);
  const decision = decide(projectedState(service), req.action);
  if (decision.kind === 'noop') {
    // Accepted with nothing to do (a billing system's retry): still who asked for what.
    const audit = operationAudit(req, service, now);
    if (audit) await insertRow(db, 'audit_log', audit);
    return { kind: 'noop', message: decision.message, service };
  }
  if (decision.kind === 'invalid') throw new ApiError('invalid_state', decision.message);
  const waiting = service.pendingJobs - (service.activeJobId ? 1 : 0);
  if (waiting >= MAX_WAITING_JOBS) {
    throw new ApiError(
      'service_busy',
      `${waiting} jobs already wait on this service; retry when some have finished`,
    );
  }
  if (tx) await req.check?.(service, tx);
  const seq = service.jobSeq + 1;
  const jobRow = newJobRow({
    id: newJobId(Date.now()),
    serviceId: service.id,
    resellerId: service.resellerId,
    action: req.action,
    params: req.params ?? {},
    seq,
    now,
    startedBy: req.startedBy ?? req.audit?.actor ?? null,
  });
  const audit = operationAudit(req, service, now);
  // The job accepted: the projection it leads to, one more pending, the sequence moved on from
  // the one read; the job and the audit entry only with it.
  const accepted = await writeGated(
    db,
    {
      table: 'services',
      set: {
        projected_status: decision.next.status,
        projected_resume: decision.next.resume,
        pending_jobs: service.pendingJobs + 1,
        job_seq: seq,
        updated_at: now,
      },
      where: { id: service.id, job_seq: service.jobSeq },
    },
    [gatedInsert('jobs', jobRow), ...(audit ? [gatedInsert('audit_log', audit)] : [])],
  );
  if (!accepted) throw new SeqConflict();
  const job = toJob(jobRow);
  if (tx) {
    await req.apply?.(tx, job, service);
    await recordSuspensionChange(tx, req, service, now);
  }
  return { kind: 'queued', job, service };
}

const ownedService = prepare({ id: slot<string>(), resellerId: slot<string>() }, (db, s) =>
  db.selectFrom('services').selectAll().where('id', '=', s.id).where('reseller_id', '=', s.resellerId),
);

/** A suspension's history (who, when, why; lifted by whom, when) kept with its acceptance; the product's own (traffic) as `system`. */
async function recordSuspensionChange(
  tx: Transaction<Database>,
  req: OperationRequest,
  service: Service,
  now: number,
): Promise<void> {
  const by = req.audit?.actor ?? SYSTEM_ACTOR;
  if (req.action === 'suspend') await recordSuspension(tx, service.id, by, req.params.reason, now);
  if (req.action === 'unsuspend') await recordLift(tx, service.id, by, now);
}

/** The reason an operation was given, for its audit entry. */
function reasonOf(req: OperationRequest): string | null {
  return req.action === 'suspend' ? req.params.reason : null;
}

/** The audit entry of an accepted operation, if it has an audit context: its target is the backup it names, else the service. */
function operationAudit(
  req: OperationRequest,
  service: Service,
  now: number,
): Insertable<AuditLogTable> | undefined {
  if (!req.audit) return undefined;
  const backupId = req.params && 'backup_id' in req.params ? req.params.backup_id : undefined;
  return auditRow(
    req.audit,
    {
      target:
        req.auditTarget ??
        (backupId ? { type: 'backup', id: backupId } : { type: 'service', id: service.id }),
      serviceId: service.id,
      resellerId: service.resellerId,
      reason: reasonOf(req),
    },
    now,
  );
}
