import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../domain/clock.ts';
import type { SecretBox } from '../domain/secret-box.ts';
import type { HypervisorDriver } from '../drivers/driver.ts';
import type { JobSignal } from '../loop/signal.ts';
import type { JobMetrics, JobRunStatus, PowerMetrics } from '../metrics.ts';
import type { Store } from '../store/database.ts';
import { isStoreUnavailable } from '../store/errors.ts';
import { claimJobs, extendLeases, recoverExpiredJobs } from './claim.ts';
import { type RunOutcome, runJob } from './run-job.ts';
import type { TaskTable } from './task.ts';

export interface WorkerOptions {
  readonly store: Store;
  readonly driver: HypervisorDriver;
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
  /** Called after every job run (tests). */
  readonly onRun?: (jobId: string, outcome: RunOutcome) => void;
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
  const running = new Map<string, Promise<void>>();
  let abort = new AbortController();
  /** Fired when stop()'s grace period is over: tells the tasks still running to give up. */
  let tasksAbort = new AbortController();
  const pollMs = o.pollMs ?? 500;
  let loop: Promise<void> | undefined;
  let lastMaintenance = 0;
  const deps = {
    workerId: id,
    tasks: o.tasks,
    driver: o.driver,
    db: o.store.db,
    features: o.store.features,
    secretBox: o.secretBox,
    clock: o.clock,
    stopTimeoutMs: o.stopTimeoutMs,
    retryBaseMs: o.retryBaseMs,
    maxAttempts: o.maxAttempts,
    log: o.log,
    powerMetrics: o.powerMetrics,
    get signal() {
      return tasksAbort.signal;
    },
  };

  async function maintenance(now: number) {
    await extendLeases(o.store.db, id, [...running.keys()], Date.now() + o.leaseMs);
    const recovered = await recoverExpiredJobs(o.store.db, Date.now(), now, o.retryBaseMs);
    if (recovered > 0) o.log.warn({ recovered }, 'recovered jobs whose worker stopped');
  }

  /** Claims and starts what it can; true if it filled every free slot (there may be more). */
  async function tick(): Promise<boolean> {
    const now = o.clock.now();
    if (Date.now() - lastMaintenance >= o.leaseMs / 3) {
      lastMaintenance = Date.now();
      await maintenance(now);
    }
    const free = o.concurrency - running.size;
    if (free <= 0) return false;
    const jobs = await claimJobs(o.store, id, free, now, Date.now() + o.leaseMs);
    for (const job of jobs) {
      const started = performance.now();
      // A run that throws has no outcome: its lease expires and it is retried.
      let ended: JobRunStatus = 'error';
      const p = runJob(deps, job)
        .then((outcome) => {
          ended = outcome;
          o.onRun?.(job.id, outcome);
        })
        .catch((err) =>
          o.log.error({ err, jobId: job.id }, 'job run failed; its lease will expire and it will be retried'),
        )
        .finally(() => {
          o.metrics?.record(job.action, ended, (performance.now() - started) / 1000);
          running.delete(job.id);
          o.signal.notify();
        });
      running.set(job.id, p);
    }
    return jobs.length === free;
  }

  async function run() {
    let backoff = 0;
    while (!abort.signal.aborted) {
      try {
        const full = await tick();
        backoff = 0;
        // Found a full batch: there may be more. Otherwise sleep until work is signalled.
        if (full && running.size < o.concurrency) continue;
        await o.signal.wait(pollMs, abort.signal);
        // Let the rest of this turn's requests and finished jobs in first: one claim for
        // all of them rather than one each.
        await setImmediate();
      } catch (err) {
        backoff = Math.min(5000, backoff ? backoff * 2 : 100);
        if (isStoreUnavailable(err)) o.log.warn({ error: String(err) }, 'store unavailable; worker waits');
        else o.log.error({ err }, 'worker loop error');
        await o.signal.wait(backoff, abort.signal);
      }
    }
  }

  return {
    id,
    get running() {
      return running.size;
    },
    start() {
      if (loop) return;
      abort = new AbortController();
      tasksAbort = new AbortController();
      loop = run();
    },
    async stop(graceMs = 30_000) {
      abort.abort();
      await loop;
      loop = undefined;
      if (await settledWithin(running.values(), graceMs)) return;
      o.log.warn(
        { running: running.size, graceMs },
        'jobs still running after the grace period; aborting them',
      );
      tasksAbort.abort(new Error('The worker is stopping'));
      await settledWithin(running.values(), o.abortWaitMs ?? 2000);
    },
  };
}

/** Whether every promise settled within `ms`. */
async function settledWithin(promises: Iterable<Promise<unknown>>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const all = Promise.allSettled([...promises]).then(() => true);
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([all, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
