import type { Kysely, Updateable } from 'kysely';
import { jobFinished, statusChanged } from '../domain/events.ts';
import { jobFailedNotification } from '../domain/notifications.ts';
import {
  decide,
  isStable,
  type JobAction,
  project,
  type ServiceState,
  statusAfterFailure,
  transitionalStatus,
} from '../domain/status-machine.ts';
import { DriverError, markerDone, type StepMarker } from '../drivers/driver.ts';
import { type Fence, fenced } from '../drivers/fence.ts';
import type { PowerMetrics } from '../metrics.ts';
import type { DialectFeatures } from '../store/database.ts';
import { isStoreUnavailable } from '../store/errors.ts';
import { gatedUpdate, readGated, writeGated } from '../store/gated-write.ts';
import { prepare, slot } from '../store/prepared.ts';
import { type BackupStatus, findBackupById, setBackupStatus } from '../store/repos/backups.ts';
import { gatedEvents, recordEvents } from '../store/repos/events.ts';
import { isHostUnreachable } from '../store/repos/host-health.ts';
import {
  type ClaimedJob,
  type Job,
  type JobClaim,
  type JobOf,
  type JobResult,
  jobFromColumn,
  ownedJob,
  queuedActions,
  type RunnableJob,
  UnreadableJob,
  updateOwnedJob,
} from '../store/repos/jobs.ts';
import { queueNotification } from '../store/repos/notifications.ts';
import {
  type ServiceChange,
  type ServicePatch,
  serviceChangeColumns,
  serviceErrorColumns,
  serviceErrorOf,
} from '../store/repos/services.ts';
import {
  OPEN_INTERVAL,
  USAGE_SOURCE,
  usageChange,
  usageSourceAfter,
} from '../store/repos/usage-intervals.ts';
import type { Database, JobTable } from '../store/schema.ts';
import { inGroupTransaction } from '../store/transaction-group.ts';
import { abortableDriver } from './abortable-driver.ts';
import { gaveUpError, retryDelayMs, retryingError, unfinishedError } from './attempts.ts';
import { abandonGivenUpExport, afterGivenUp, type GivenUpBackup } from './backup-chain.ts';
import { checkAtJobStart } from './power-check.ts';
import { jobResultOf, type TaskContext, type TaskTable } from './task.ts';

export interface RunDeps extends Omit<TaskContext, 'job' | 'service' | 'from' | 'stepMarker'> {
  readonly workerId: string;
  /**
   * The worker's lease on this run's job (jobs/lease.ts), the fence of the task's driver calls:
   * once it is down, the run takes no further step on the host and ends without a write.
   */
  readonly lease?: Fence & { readonly stop: AbortSignal; expired(): boolean };
  readonly tasks: TaskTable;
  readonly retryBaseMs: number;
  readonly maxAttempts: number;
  /** Where the power check at a job's start counts its corrections. */
  readonly powerMetrics?: PowerMetrics;
  readonly features: Pick<DialectFeatures, 'rowLocks'>;
  /**
   * How long a job of a service whose host is unreachable waits before it looks again (host
   * health's probe interval; default 10 s).
   */
  readonly hostWaitMs?: number;
}

const HOST_WAIT_MS = 10_000;

/** What a job retried because the store refused one of its steps for now says. */
const STORE_REFUSED = 'the database could not complete a step just now';

/** What happened, for logs and tests. */
export type RunOutcome = 'succeeded' | 'failed' | 'retrying' | 'lost';

/**
 * `work` inside the run's fence, if it has one (drivers/fence.ts): the task, and the driver calls
 * of a job's end.
 */
const inFence = <R>(deps: RunDeps, work: () => Promise<R>): Promise<R> =>
  deps.lease ? fenced(deps.lease, work) : work();

/** The task stops for a shutdown past its grace period, and for a lease run out un-renewed. */
const stopOf = (deps: RunDeps): AbortSignal => deps.lease?.stop ?? deps.signal;

/** Lost the lease to another worker (this process was presumed dead): drop the result, the new owner redoes it. */
class LeaseLost extends Error {}

/** How a job ends: the service's new state on success; on failure, the state it had (see statusAfterFailure). */
type Ending =
  | {
      readonly status: 'succeeded';
      readonly patch: ServicePatch;
      readonly after: ServiceState;
      readonly result?: JobResult | null;
    }
  | {
      readonly status: 'failed';
      readonly error: string;
      readonly attempts?: number;
      /** The backup a backup job gives up without its task (unfinishedBackup), settled with the job. */
      readonly backup?: UnfinishedBackup;
    };

const failed = (error: string): Ending => ({ status: 'failed', error });

/**
 * The backup of a backup job that ends without its task, `shown` as its task shows it while it
 * runs, and what the job's end makes of it then: `back`.
 */
interface UnfinishedBackup {
  readonly id: string;
  readonly shown: BackupStatus;
  readonly back: BackupStatus;
}

/**
 * What a backup job ended without its task (every attempt's process died, or the service's state
 * no longer allowed it) leaves of its backup, in the job's end transaction: a backup being taken
 * is nothing, `failed` (0 GB), its checkpoint dropped before the end and what its attempts wrote
 * to the store removed after it (abandonGivenUpExport, afterGivenUp); one being deleted is
 * `available` again, then `failed` (0 GB) if an attempt had removed its objects already
 * (afterGivenUp, after the job's end); one being restored is `available` again (a restore changes
 * nothing of the backup). Only from the status
 * its task shows: a backup that shows another (a deletion accepted while a restore's attempt ran
 * shows `deleting`) stays as it is.
 */
function unfinishedBackup(job: RunnableJob): { readonly backup?: UnfinishedBackup } {
  switch (job.action) {
    case 'backup_create':
      return job.params.backup_id
        ? { backup: { id: job.params.backup_id, shown: 'creating', back: 'failed' } }
        : {};
    case 'backup_delete':
      return { backup: { id: job.params.backup_id, shown: 'deleting', back: 'available' } };
    case 'backup_restore':
      return { backup: { id: job.params.backup_id, shown: 'restoring', back: 'available' } };
    default:
      return {};
  }
}
const words = (job: Job) => job.action.replaceAll('_', ' ');

/**
 * Runs one claimed job: re-checks it against the service's actual status (an earlier job may
 * have failed), shows the transitional status, calls the task, and records the outcome and the
 * service's new state in one transaction, guarded by the lease so a job never completes twice.
 */
export async function runJob(deps: RunDeps, claimed: ClaimedJob): Promise<RunOutcome> {
  const { db, clock, log } = deps;
  let job: RunnableJob;
  try {
    job = claimed.read();
  } catch (err) {
    if (!(err instanceof UnreadableJob)) throw err;
    log.error({ jobId: claimed.id, action: claimed.action, msg: err.message }, 'job cannot be read');
    return finish(deps, claimed, undefined, failed(err.message));
  }
  // As the claim left it (it returned the row it wrote).
  const found = claimed.service;
  if (!found) return finish(deps, job, undefined, failed('The service no longer exists'));
  // A host marked unreachable answers nothing: its services' jobs wait for it, in the queue,
  // without using up attempts (one read by key; the claim itself stays as it is).
  if (
    found.hostId !== null &&
    (await isHostUnreachable(db, found.hostId)) &&
    !(await movedOff(deps, job, found.hostId))
  )
    return waitForHost(deps, job, found.hostId);
  // The first attempt starts from what the hypervisor says of the VM's power, not from what the
  // store remembers; a re-run keeps the state its first attempt recorded (its own work may have
  // changed the power since).
  const { service, corrected } =
    job.from === null && job.attempts <= deps.maxAttempts
      ? await checkAtJobStart({ ...deps, metrics: deps.powerMetrics }, job, found)
      : { service: found, corrected: undefined };

  // The state before this job: recorded at its first start, so a retry after a crash sees the same.
  const from: ServiceState =
    job.from ??
    (isStable(service.status)
      ? { status: service.status, resume: service.resumeStatus }
      : { status: service.projectedStatus, resume: service.projectedResume });

  // Claimed once more than allowed: its workers kept dying (or could not save its end). Running
  // it again would hold the service's queue for ever; it fails, with what the last attempt said.
  if (job.attempts > deps.maxAttempts) {
    const used = job.attempts - 1;
    return finish(deps, job, from, {
      status: 'failed',
      error: withMarkerDone(gaveUpError(used, job.error), job.stepMarker),
      attempts: used,
      ...unfinishedBackup(job),
    });
  }

  const decision = decide(from, job.action);
  if (decision.kind === 'noop')
    return finish(deps, job, from, { status: 'succeeded', patch: {}, after: from });
  if (decision.kind === 'invalid') {
    // The check at its start changed the service: that is why, rather than an earlier job.
    const why = corrected
      ? corrected.charAt(0).toLowerCase() + corrected.slice(1)
      : 'an earlier job did not succeed';
    return finish(deps, job, from, { ...failed(`${decision.message} (${why})`), ...unfinishedBackup(job) });
  }

  // The transitional status and its event, written only while this worker owns the job.
  const now = clock.now();
  const shown = transitionalStatus(job.action, from.status);
  const owned = await writeGated(db, ownedJob(claimOf(deps, job), jobFromColumn(from)), [
    gatedUpdate({ table: 'services', set: { status: shown, updated_at: now }, where: { id: service.id } }),
    gatedEvents(job.resellerId, statusChanged(service.id, service.status, shown, job.id), now),
  ]);
  if (!owned) return 'lost';

  let change: ServiceChange;
  /** The job's step marker as this attempt leaves it (recorded by an earlier one, or by this one). */
  let marked = job.stepMarker;
  const stop = stopOf(deps);
  const context = {
    ...deps,
    signal: stop,
    driver: abortableDriver(deps.driver, stop, deps.lease),
    service,
    from,
    stepMarker: stepMarker(deps, job, (value) => {
      marked = value;
    }),
  };
  try {
    // The whole task inside the run's fence: its driver steps and its writes to the backup store.
    change = await inFence(deps, () => runTask(deps.tasks, job, context));
  } catch (err) {
    if (err instanceof LeaseLost) return 'lost';
    // Another worker may run the job now: this run writes nothing more of it (whatever the
    // task failed of), and the job's next run, this worker's or another's, does its work.
    if (deps.lease?.expired()) {
      log.warn(
        { jobId: job.id, action: job.action },
        'the job’s lease ran out before its worker could renew it; this run stopped where it was',
      );
      return 'lost';
    }
    // The worker is stopping and this job ran past the grace period: back to the queue at once,
    // for another process (or this one, restarted), rather than held until its lease runs out.
    if (deps.signal.aborted) {
      log.warn({ jobId: job.id, action: job.action }, 'job interrupted by shutdown; queued again');
      return retry(deps, job, from, { error: unfinishedError(job.attempts), delayMs: 0 });
    }
    const driverError = err instanceof DriverError ? err : undefined;
    // The store refused a step for now (a deadlock it broke on this side, a lost connection):
    // tried again, as a transient failure of the hypervisor is (a task's steps can be redone).
    const storeRefused = !driverError && isStoreUnavailable(err);
    if (storeRefused)
      log.warn({ jobId: job.id, action: job.action, error: String(err) }, 'store refused a step; retrying');
    else if (!driverError) log.error({ err, jobId: job.id, action: job.action }, 'job failed unexpectedly');
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
    // Failed because its host stopped answering, and host health has noticed: the attempt is given back.
    if (driverError?.transient && service.hostId !== null && (await isHostUnreachable(db, service.hostId)))
      return retry(deps, job, from, {
        error: hostWaitError(service.hostId),
        delayMs: deps.hostWaitMs ?? HOST_WAIT_MS,
        attempts: job.attempts - 1,
      });
    if ((driverError?.transient || storeRefused) && job.attempts < deps.maxAttempts)
      return retry(deps, job, from, {
        error: retryingError(job.attempts, driverError?.message ?? STORE_REFUSED),
        delayMs: retryDelayMs(deps.retryBaseMs, job.attempts),
      });
    const message = driverError ? driverError.message : `Internal error while running ${words(job)}`;
    return finish(deps, job, from, failed(withMarkerDone(message, marked)));
  }
  const next = decision.next;
  return finish(deps, job, from, {
    status: 'succeeded',
    patch: { ...serviceChangeColumns(change), resume_status: next.resume },
    after: next,
    result: jobResultOf(change),
  });
}

/** Calls the task of the job's own action, which gets that action's parameters. */
function runTask<A extends JobAction>(
  tasks: TaskTable,
  job: JobOf<A>,
  rest: Omit<TaskContext<A>, 'job'>,
): Promise<ServiceChange> {
  const task: TaskTable[A] = tasks[job.action];
  return task({ ...rest, job });
}

/**
 * Writes `set` to the job's row and runs `body` in the same transaction, only while this worker
 * owns the job (else LeaseLost): the ownership check is the write itself (updateOwnedJob), the
 * transaction's first statement. Without a body, the one statement needs no transaction.
 */
async function guarded(
  db: Kysely<Database>,
  job: Job,
  workerId: string,
  set: Updateable<JobTable>,
  body?: (tx: Kysely<Database>) => Promise<void>,
): Promise<void> {
  if (!body) {
    if (!(await updateOwnedJob(db, { id: job.id, workerId, attempts: job.attempts }, set)))
      throw new LeaseLost();
    return;
  }
  await db.transaction().execute(async (tx) => {
    if (!(await updateOwnedJob(tx, { id: job.id, workerId, attempts: job.attempts }, set)))
      throw new LeaseLost();
    await body(tx);
  });
}

/** The job's step marker, written only while this worker owns the job; `recorded` hears each value stored. */
function stepMarker(deps: RunDeps, job: RunnableJob, recorded: (value: string) => void): StepMarker {
  return {
    recorded: job.stepMarker,
    record: async (value) => {
      await guarded(deps.db, job, deps.workerId, { step_marker: value });
      recorded(value);
    },
  };
}

/**
 * A failed job's error, with what its recorded step marker says was done before it failed
 * (markerDone): a restore that put the disk back and then could not start the server says so.
 */
const withMarkerDone = (error: string, marker: string | null) => {
  const done = markerDone(marker);
  return done ? `${error} (${done})` : error;
};

/** This worker's claim of the job, which its writes to the job's row are guarded by. */
const claimOf = (deps: Pick<RunDeps, 'workerId'>, job: Pick<Job, 'id' | 'attempts'>): JobClaim => ({
  id: job.id,
  workerId: deps.workerId,
  attempts: job.attempts,
});

const hostWaitError = (hostId: string) => `Waiting for host ${hostId} to answer again`;

/**
 * Whether the job is a migrate that began and whose VM the driver finds on another host than
 * `hostId` (it switched over, then its old host stopped answering): it runs and records where the
 * VM is rather than wait for a host it no longer needs. A driver that cannot tell now waits too.
 */
async function movedOff(deps: RunDeps, job: RunnableJob, hostId: string): Promise<boolean> {
  if (job.action !== 'migrate' || job.from === null) return false;
  try {
    const vm = await deps.driver.inspect(job.serviceId);
    return vm !== undefined && vm.hostId !== hostId;
  } catch (err) {
    if (err instanceof DriverError) return false;
    throw err;
  }
}

/**
 * Puts the job back in the queue before it did anything, without using up an attempt: its
 * service's host is unreachable. It runs once host health finds the host answering again.
 */
async function waitForHost(deps: RunDeps, job: Job, hostId: string): Promise<RunOutcome> {
  const now = deps.clock.now();
  const requeue = {
    status: 'queued',
    run_at: now + (deps.hostWaitMs ?? HOST_WAIT_MS),
    attempts: job.attempts - 1,
    error: hostWaitError(hostId),
    locked_by: null,
    locked_until: null,
  } as const;
  try {
    await guarded(deps.db, job, deps.workerId, requeue, async (tx) => {
      await tx
        .updateTable('services')
        .set({ active_job_id: null })
        .where('id', '=', job.serviceId)
        .where('active_job_id', '=', job.id)
        .execute();
    });
  } catch (err) {
    if (err instanceof LeaseLost) return 'lost';
    throw err;
  }
  return 'retrying';
}

/**
 * Puts the job back in the queue, to run again after `delayMs`, the service back as it was.
 * `attempts`: what the job's count of attempts becomes (an attempt given back), if not as claimed.
 */
async function retry(
  deps: RunDeps,
  job: Job,
  from: ServiceState,
  next: { readonly error: string; readonly delayMs: number; readonly attempts?: number },
): Promise<RunOutcome> {
  const now = deps.clock.now();
  try {
    const requeue = {
      status: 'queued',
      run_at: now + next.delayMs,
      error: next.error,
      ...(next.attempts !== undefined ? { attempts: next.attempts } : {}),
      locked_by: null,
      locked_until: null,
    } as const;
    await guarded(deps.db, job, deps.workerId, requeue, async (tx) => {
      const back = await tx
        .updateTable('services')
        .set({ status: from.status, active_job_id: null, updated_at: now })
        .where('id', '=', job.serviceId)
        .returning(['error_code', 'error_message'])
        .executeTakeFirst();
      const shown = transitionalStatus(job.action, from.status);
      // Back to `failed` (a create or terminate of a failed service): the reason it still has.
      const error = back ? serviceErrorOf(back) : null;
      await recordEvents(
        tx,
        job.resellerId,
        statusChanged(job.serviceId, shown, from.status, job.id, error),
        now,
      );
    });
  } catch (err) {
    if (err instanceof LeaseLost) return 'lost';
    throw err;
  }
  return 'retrying';
}

/**
 * Records the end of a job and the service's state after it. If the store refuses that record
 * (a value it cannot hold), the job fails instead, with a minimal record in a transaction of its
 * own: left running, it would be recovered and re-run for ever, and its service's queue with it.
 * A store out of reach is different: the lease runs out and the job re-runs, within its attempts.
 */
async function finish(
  deps: RunDeps,
  job: Job,
  from: ServiceState | undefined,
  ending: Ending,
  fallback = true,
): Promise<RunOutcome> {
  // A backup being taken that the end will make `failed`: its checkpoint goes first, while the
  // job still holds the service.
  const giveUp = ending.status === 'failed' ? ending.backup : undefined;
  if (giveUp?.shown === 'creating')
    await inFence(deps, () =>
      abandonGivenUpExport(
        deps.db,
        abortableDriver(deps.driver, stopOf(deps), deps.lease),
        giveUp.id,
        deps.log,
      ),
    );
  // A migration the end leaves failed: its move goes too, while the job still holds the service.
  if (ending.status === 'failed' && job.action === 'migrate') await abandonUnfinishedMigration(deps, job);
  let given: GivenUpBackup | undefined;
  try {
    given = await save(deps, job, from, ending);
  } catch (err) {
    if (err instanceof LeaseLost) return 'lost';
    if (!fallback || isStoreUnavailable(err)) throw err;
    deps.log.error(
      { err, jobId: job.id, action: job.action },
      'could not save the job result; failing the job',
    );
    return finish(deps, job, from, failed(`The result of ${words(job)} could not be saved`), false);
  }
  // The end settled a backup being deleted or taken without looking in the backup store (its
  // transaction reads no store): now it looks, the job ended.
  if (given) await afterGivenUp(deps.db, deps.backups.archive, given, deps.clock.now(), deps.log);
  return ending.status;
}

/**
 * Settles the move of a migrate job that ends failed (HypervisorDriver.abandonMigration): a task
 * that fails undoes its move itself, but one whose attempts died (the job given up), or whose
 * undo could not be written, leaves the destination reserved and recorded on the VM. Left so,
 * that host's room would stay taken with no server on it (it could not be deleted), and the
 * service's next migration would take that reservation up, to a host that may be draining by
 * then. Nothing to do for a VM without a move under way. A driver that cannot now leaves it,
 * with a warning: the server's destruction gives it back, and its next migration checks it again
 * by the destination's rule.
 */
async function abandonUnfinishedMigration(deps: RunDeps, job: Job): Promise<void> {
  try {
    await inFence(deps, () =>
      abortableDriver(deps.driver, stopOf(deps), deps.lease).abandonMigration(job.serviceId),
    );
  } catch (err) {
    deps.log.warn(
      { err, jobId: job.id, serviceId: job.serviceId },
      "could not settle the move of a migrate job that ended failed; the server's next migration checks it again",
    );
  }
}

/**
 * What the job's end reads of its service, then changes (save): its queue, its error, what its
 * usage interval is made of, and that interval as it is open (one read for both).
 */
const END_COLUMNS = [
  ...new Set([
    'pending_jobs',
    'projected_status',
    'projected_resume',
    'job_seq',
    'error_code',
    'error_message',
    'domain_name',
    'status',
    ...USAGE_SOURCE,
  ] as const),
];
const endReadOf = (lock: boolean) =>
  prepare({ id: slot<string>() }, (db, s) =>
    db
      .selectFrom('services')
      .leftJoin('usage_intervals as u', (j) =>
        j.onRef('u.service_id', '=', 'services.id').on('u.ended_at', 'is', null),
      )
      .select([...END_COLUMNS.map((c) => `services.${c}` as const), ...OPEN_INTERVAL])
      .where('services.id', '=', s.id)
      .$if(lock, (q) => q.forUpdate('services')),
  );
/** Exported for the test of its plan (test/store/quota-usage-plans.test.ts). */
export const endRead = endReadOf(false);
const endReadLocked = endReadOf(true);

/**
 * On failure, the projection the queued requests were accepted against is rebuilt from the real
 * state. Returns the backup a backup_delete or backup_create ended without its task settled, as
 * it left it (for afterGivenUp).
 */
async function save(
  deps: RunDeps,
  job: Job,
  from: ServiceState | undefined,
  ending: Ending,
): Promise<GivenUpBackup | undefined> {
  const now = deps.clock.now();
  const patch: ServicePatch = ending.status === 'succeeded' ? ending.patch : {};
  const after: ServiceState | undefined =
    ending.status === 'succeeded'
      ? ending.after
      : from && { status: statusAfterFailure(job.action, from.status), resume: from.resume };
  // Every end sets the same columns (an attempt given back, or the count as claimed; a result,
  // or none, as the job had until now): the ends of one turn are then one shape, read in one
  // statement that locks their services in one order (readGated). Ends of two shapes went in two
  // statements, each in its services' order but not the two together, and a request's write
  // could wait for the group crosswise (a deadlock, found by job-processes-deadlocks.test.ts).
  const end: Updateable<JobTable> = {
    status: ending.status,
    error: ending.status === 'failed' ? ending.error : null,
    attempts: (ending.status === 'failed' ? ending.attempts : undefined) ?? job.attempts,
    result: ending.status === 'succeeded' && ending.result ? JSON.stringify(ending.result) : null,
    finished_at: now,
    locked_by: null,
    locked_until: null,
  };
  // With the ends of this turn's other jobs, on PostgreSQL (transaction-group.ts): the body is
  // only the transaction's work, and may run twice.
  return inGroupTransaction(deps.db, async (tx) => {
    // The job's end, only while this worker owns it, and then the service's read (one statement
    // on PostgreSQL). The service is locked to the commit (PostgreSQL), and the job sequence
    // moved: a request accepted meanwhile either commits before this read (and is counted here)
    // or fails its compare-and-set on job_seq and is checked again against what this commit
    // leaves. Without both, one of the two wrote a count of pending jobs it had read before the
    // other's commit.
    const read = (deps.features.rowLocks ? endReadLocked : endRead).compile(tx, { id: job.serviceId });
    const { changed: owned, row: service } = await readGated(tx, ownedJob(claimOf(deps, job), end), read);
    if (!owned) throw new LeaseLost();
    const finished = jobFinished(job, ending.status, ending.status === 'failed' ? ending.error : null);
    // A job that ends failed has made its last attempt (retries go back to the queue instead):
    // the operators hear of it, in the transaction that records it.
    if (ending.status === 'failed') {
      const failure = { ...job, domain: service?.domain_name ?? null, error: ending.error };
      await queueNotification(tx, jobFailedNotification(failure), now);
    }
    let given: GivenUpBackup | undefined;
    // As unfinishedBackup says. A backup being deleted is as it was (its deletion can be asked
    // again, and removes what an attempt left), unless its objects are gone; one being taken
    // loses what its attempts stored (finish).
    const settle = ending.status === 'failed' ? ending.backup : undefined;
    const backup = settle && (await findBackupById(tx, settle.id));
    if (settle && backup?.status === settle.shown) {
      const sizeGb = settle.back === 'failed' ? 0 : undefined;
      await setBackupStatus(tx, backup.id, settle.back, now, sizeGb, backup);
      if (job.action === 'backup_delete' || job.action === 'backup_create')
        given = {
          action: job.action,
          backup: { ...backup, status: settle.back, sizeGb: sizeGb ?? backup.sizeGb, updatedAt: now },
        };
    }
    if (!service) {
      await recordEvents(tx, job.resellerId, [finished], now);
      return given;
    }
    const pending = Math.max(0, service.pending_jobs - 1);
    const set: ServicePatch = {
      ...patch,
      active_job_id: null,
      pending_jobs: pending,
      job_seq: service.job_seq + 1,
      updated_at: now,
    };
    if (after) {
      set.status = after.status;
      if (patch.resume_status === undefined) set.resume_status = after.resume;
    }
    // Why the service is failed: a create that failed for good says so; a service that is no
    // longer failed has no reason left; otherwise (a failed job that leaves it failed as it was)
    // the reason it had stays.
    let error = serviceErrorOf(service);
    if (set.status !== undefined && set.status !== 'failed') error = null;
    else if (set.status === 'failed' && ending.status === 'failed' && job.action === 'create')
      error = { code: 'create_failed', message: ending.error };
    Object.assign(set, serviceErrorColumns(error));
    if (ending.status === 'failed' && after) {
      const rest = pending === 0 ? [] : await queuedActions(tx, job.serviceId);
      const projected = project(after, rest);
      set.projected_status = projected.status;
      set.projected_resume = projected.resume;
    } else if (pending === 0 && after) {
      set.projected_status = after.status;
      set.projected_resume = after.resume;
    }
    // The service, its usage interval and the events in one write (one statement on PostgreSQL).
    const usage =
      ending.status === 'succeeded'
        ? await usageChange(tx, job.action, service, usageSourceAfter(service, set), job.serviceId, now)
        : [];
    const changed =
      set.status === undefined ? [] : statusChanged(job.serviceId, service.status, set.status, job.id, error);
    const written = await writeGated(tx, { table: 'services', set, where: { id: job.serviceId } }, [
      ...usage,
      gatedEvents(job.resellerId, [...changed, finished], now),
    ]);
    // Read in this transaction (and locked, on PostgreSQL): it cannot be gone.
    if (!written) throw new Error(`service ${job.serviceId} vanished while its job ended`);
    return given;
  });
}
