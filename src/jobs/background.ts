import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.ts';
import type { HypervisorDriver } from '../drivers/driver.ts';
import { createPruner, type Pruner } from './prune.ts';
import type { RunOutcome } from './run-job.ts';
import { createScheduler, type Scheduler } from './scheduler.ts';
import { TASKS } from './tasks/index.ts';
import { createWorker, type Worker } from './worker.ts';

export interface Background {
  readonly worker: Worker;
  readonly scheduler: Scheduler;
  readonly pruner: Pruner;
  stop(graceMs?: number): Promise<void>;
}

/** The worker and the backup scheduler of a process that runs jobs. */
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
    metrics: ctx.metrics.jobs,
  });
  const scheduler = createScheduler({
    store: ctx.store,
    clock: ctx.clock,
    log,
    signal: ctx.jobSignal,
    graceMs: ctx.config.schedulerGraceMs,
    intervalMs: ctx.config.schedulerIntervalMs,
  });
  const pruner = createPruner({
    store: ctx.store,
    clock: ctx.clock,
    log,
    retentionMs: ctx.config.jobRetentionMs,
    auditRetentionMs: ctx.config.auditRetentionMs,
    intervalMs: ctx.config.pruneIntervalMs,
  });
  worker.start();
  scheduler.start();
  pruner.start();
  return {
    worker,
    scheduler,
    pruner,
    async stop(graceMs) {
      await pruner.stop();
      await scheduler.stop();
      await worker.stop(graceMs);
    },
  };
}
