import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../domain/clock.ts';
import type { SecretBox } from '../domain/secret-box.ts';
import type { JobAction } from '../domain/status-machine.ts';
import type { HypervisorDriver } from '../drivers/driver.ts';
import type { ReverseDns } from '../drivers/reverse-dns/ptr-backend.ts';
import { createPollLoop } from '../loop/poll-loop.ts';
import type { JobSignal } from '../loop/signal.ts';
import type { JobMetrics, JobRunStatus, PowerMetrics } from '../metrics.ts';
import type { Store } from '../store/database.ts';
import { isStoreUnavailable } from '../store/errors.ts';
import type { BackupDeps } from './backup-chain.ts';
import { claimJobs, extendLeases, recoverExpiredJobs } from './claim.ts';
import { JobLease } from './lease.ts';
import { type RunOutcome, runJob } from './run-job.ts';
import type { TaskTable } from './task.ts';

export interface WorkerOptions {
  readonly store: Store;
  readonly driver: HypervisorDriver;
  /** The backup store's archive and the termination rule of backups (backup-chain.ts). */
  readonly backups: BackupDeps;
  /** Reverse DNS on the DNS server, for create and terminate; none when it is not configured. */
  readonly reverseDns?: ReverseDns;
  readonly secretBox: SecretBox;
  readonly clock: Clock;
  readonly log: FastifyBaseLogger;
  readonly signal: JobSignal;
  readonly tasks: TaskTable;
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly retryBaseMs: number;
  readonly maxAttempts: number;
  readonly stopTimeoutMs: number;
  /** Longest sleep between polls when idle. */
  readonly pollMs?: number;
  /** How long stop() waits for aborted tasks to end after the grace period (default 2 s). */
  readonly abortWaitMs?: number;
  /** Called after every job run (tests; the evacuator's wake-up when a migration ended). */
  readonly onRun?: (jobId: string, outcome: RunOutcome, action: JobAction) => void;
  /** How long a job of a service on an unreachable host waits before it looks again (run-job.ts). */
  readonly hostWaitMs?: number;
  /** Where every job run is counted, with its action, how it ended and how long it took. */
  readonly metrics?: JobMetrics;
  /** Where the power check at a job's start counts its corrections (jobs/power-check.ts). */
  readonly powerMetrics?: PowerMetrics;
}

export interface Worker {
  readonly id: string;
  start(): void;
  /**
   * Stops claiming and waits for running jobs up to `graceMs`; then aborts the tasks still
   * running (their AbortSignal) and waits for them to put their jobs back in the queue, up to
   * `abortWaitMs` more. A task that ignores its signal keeps its job until the lease runs out.
   */
  stop(graceMs?: number): Promise<void>;
  /** Jobs running now in this worker. */
  readonly running: number;
}

/**
 * Claims and runs jobs: many services in parallel (up to `concurrency`), one job at a time
 * per service, in order. Jobs of dead workers are recovered when their lease runs out.
 */
export function createWorker(o: WorkerOptions): Worker {
  const id = `worker-${randomUUID()}`;
  let lastMaintenance = 0;
  const deps = {
    workerId: id,
    tasks: o.tasks,
    driver: o.driver,
    backups: o.backups,
    db: o.store.db,
    reverseDns: o.reverseDns,
    features: o.store.features,
    secretBox: o.secretBox,
    clock: o.clock,
    stopTimeoutMs: o.stopTimeoutMs,
    retryBaseMs: o.retryBaseMs,
    maxAttempts: o.maxAttempts,
    log: o.log,
    powerMetrics: o.powerMetrics,
    hostWaitMs: o.hostWaitMs,
    // Fired when stop()'s grace period is over: tells the tasks still running to give up.
    get signal() {
      return loop.workSignal;
    },
  };

  /** Each running job's lease as this worker knows it: the fence of its run's driver steps (lease.ts). */
  const leases = new Map<string, JobLease>();

  /**
   * The running jobs' leases, a lease from now: by the loop's maintenance, and through a stop.
   * Only the jobs whose rows took the renewal have their fence moved on: one this worker no longer
   * owns keeps the time it had, and its run stops there.
   */
  const renewLeases = async () => {
    const until = Date.now() + o.leaseMs;
    // A run whose fence went down is not renewed: its job goes to the next run once the lease ends.
    const held = [...loop.running.keys()].filter((jobId) => leases.get(jobId)?.isDown !== true);
    for (const jobId of await extendLeases(o.store, id, held, until)) leases.get(jobId)?.renewed(until);
  };

  /** Runs whose lease is near its end un-renewed stop: before a renewal that may fail (the store out of reach) or come too late. */
  const sweepLeases = () => {
    for (const lease of leases.values()) lease.expired();
  };

  async function maintenance(now: number) {
    await renewLeases();
    const recovered = await recoverExpiredJobs(o.store, Date.now(), now, o.retryBaseMs);
    if (recovered > 0) o.log.warn({ recovered }, 'recovered jobs whose worker stopped');
  }

  /** Claims and starts what it can; true if it filled every free slot (there may be more). */
  async function tick(): Promise<boolean> {
    sweepLeases();
    const now = o.clock.now();
    if (Date.now() - lastMaintenance >= o.leaseMs / 3) {
      lastMaintenance = Date.now();
      await maintenance(now);
    }
    const free = o.concurrency - loop.running.size;
    if (free <= 0) return false;
    const until = Date.now() + o.leaseMs;
    const jobs = await claimJobs(o.store, id, free, now, until);
    for (const job of jobs) {
      const started = performance.now();
      // Claimed again while an earlier run of it goes on here (its lease ran out, and recovery
      // queued it): that run is stale, and stops.
      leases.get(job.id)?.takeDown();
      const lease = new JobLease(
        { jobId: job.id, attempt: job.attempts },
        until,
        loop.workSignal,
        o.leaseMs / 10,
      );
      leases.set(job.id, lease);
      // A run that throws has no outcome: its lease expires and it is retried.
      let ended: JobRunStatus = 'error';
      const p = runJob({ ...deps, lease }, job)
        .then((outcome) => {
          ended = outcome;
          o.onRun?.(job.id, outcome, job.action);
        })
        .catch((err) =>
          o.log.error({ err, jobId: job.id }, 'job run failed; its lease will expire and it will be retried'),
        )
        .finally(() => {
          lease.end();
          if (leases.get(job.id) === lease) leases.delete(job.id);
          o.metrics?.record(job.action, ended, (performance.now() - started) / 1000);
        });
      loop.track(job.id, p);
    }
    return jobs.length === free;
  }

  const loop = createPollLoop<string>({
    tick,
    signal: o.signal,
    pollMs: o.pollMs ?? 500,
    concurrency: o.concurrency,
    onError(err) {
      if (isStoreUnavailable(err)) o.log.warn({ error: String(err) }, 'store unavailable; worker waits');
      else o.log.error({ err }, 'worker loop error');
    },
  });

  return {
    id,
    get running() {
      return loop.running.size;
    },
    start: loop.start,
    async stop(graceMs = 30_000) {
      // The loop that renews the running jobs' leases ends first; they are renewed here until
      // the jobs end (or the stop gives up on them). A lease that ran out during the grace period
      // would let another process's worker run the job beside this one.
      let renewing: Promise<void> = Promise.resolve();
      const renewal = setInterval(
        () => {
          renewing = renewing
            .then(() => {
              // The loop's looks, which sweep them too, have ended.
              sweepLeases();
              return renewLeases();
            })
            .catch((err) =>
              o.log.warn({ error: String(err) }, 'the running jobs’ leases could not be renewed'),
            );
        },
        Math.max(1, Math.floor(o.leaseMs / 3)),
      );
      try {
        await loop.stop({
          graceMs,
          reason: new Error('The worker is stopping'),
          onGraceOver: (running) =>
            o.log.warn({ running, graceMs }, 'jobs still running after the grace period; aborting them'),
          abortWaitMs: o.abortWaitMs ?? 2000,
        });
      } finally {
        clearInterval(renewal);
        await renewing;
      }
    },
  };
}
