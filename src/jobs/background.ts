import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.ts';
import type { HypervisorDriver } from '../drivers/driver.ts';
import type { RunOutcome } from './run-job.ts';
import { TASKS } from './tasks/index.ts';
import { createWorker, type Worker } from './worker.ts';

export interface Background {
  readonly worker: Worker;
  stop(graceMs?: number): Promise<void>;
}

/** The worker (and, with backups, the scheduler) of a process that runs jobs. */
export function startBackground(
  ctx: AppContext,
  driver: HypervisorDriver,
  log: FastifyBaseLogger,
  options: { pollMs?: number; onRun?: (jobId: string, outcome: RunOutcome) => void } = {},
): Background {
  const worker = createWorker({
    store: ctx.store,
    driver,
    secretBox: ctx.secretBox,
    clock: ctx.clock,
    log,
    signal: ctx.jobSignal,
    tasks: TASKS,
    concurrency: ctx.config.workerConcurrency,
    leaseMs: ctx.config.jobLeaseMs,
    retryBaseMs: ctx.config.jobRetryBaseMs,
    maxAttempts: ctx.config.jobMaxAttempts,
    stopTimeoutMs: ctx.config.stopTimeoutMs,
    pollMs: options.pollMs,
    onRun: options.onRun,
  });
  worker.start();
  return {
    worker,
    async stop(graceMs) {
      await worker.stop(graceMs);
    },
  };
}
