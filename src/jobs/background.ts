import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.ts';
import type { HypervisorDriver } from '../drivers/driver.ts';
import { createDeliverer, type Deliverer } from '../webhooks/deliverer.ts';
import { createPruner, type Pruner } from './prune.ts';
import type { RunOutcome } from './run-job.ts';
import { createScheduler, type Scheduler } from './scheduler.ts';
import { TASKS } from './tasks/index.ts';
import { createWorker, type Worker } from './worker.ts';

export interface Background {
  readonly worker: Worker;
  readonly scheduler: Scheduler;
  readonly pruner: Pruner;
  readonly deliverer: Deliverer;
  stop(graceMs?: number): Promise<void>;
}

/** The worker, the backup scheduler, the pruner and the webhook sender of a process that runs jobs. */
export function startBackground(
  ctx: AppContext,
  driver: HypervisorDriver,
  log: FastifyBaseLogger,
  options: { pollMs?: number; onRun?: (jobId: string, outcome: RunOutcome) => void } = {},
): Background {
  const deliverer = createDeliverer({
    store: ctx.store,
    clock: ctx.clock,
    log,
    secretBox: ctx.secretBox,
    lookup: ctx.lookup,
    allowPrivate: ctx.config.webhookAllowPrivate,
    concurrency: ctx.config.webhookConcurrency,
    metrics: ctx.metrics.webhooks,
  });
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
    // A job that ran has recorded events: the sender looks for their deliveries at once.
    onRun: (jobId, outcome) => {
      deliverer.notify();
      options.onRun?.(jobId, outcome);
    },
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
    eventRetentionMs: ctx.config.eventRetentionMs,
    intervalMs: ctx.config.pruneIntervalMs,
  });
  worker.start();
  scheduler.start();
  pruner.start();
  deliverer.start();
  return {
    worker,
    scheduler,
    pruner,
    deliverer,
    async stop(graceMs) {
      await pruner.stop();
      await scheduler.stop();
      // Attempts under way and jobs finish side by side; both stop within the grace period.
      await Promise.all([worker.stop(graceMs), deliverer.stop(Math.min(graceMs ?? 2000, 2000))]);
    },
  };
}
