import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.ts';
import type { HypervisorDriver } from '../drivers/driver.ts';
import { createDeliverer, type Deliverer } from '../webhooks/deliverer.ts';
import { backupDeps } from './backup-chain.ts';
import { createEvacuator, type Evacuator } from './evacuator.ts';
import { createHostHealth, type HostHealth } from './host-health.ts';
import { createNotificationFlusher, type NotificationFlusher } from './notify-flusher.ts';
import { createSmtpMailer } from './notify-mail.ts';
import { createPruner, type Pruner } from './prune.ts';
import { createReconciler, type Reconciler } from './reconciler.ts';
import { createRescueSweep, type RescueSweep } from './rescue-sweep.ts';
import type { RunOutcome } from './run-job.ts';
import { createScheduler, type Scheduler } from './scheduler.ts';
import { TASKS } from './tasks/index.ts';
import { createTrafficSampler, type TrafficSampler } from './traffic-sampler.ts';
import { createWorker, type Worker } from './worker.ts';

export interface Background {
  readonly worker: Worker;
  readonly scheduler: Scheduler;
  readonly pruner: Pruner;
  readonly deliverer: Deliverer;
  /** The power-state reconciler; its periodic pass runs unless VRP_RECONCILE_INTERVAL is 0. */
  readonly reconciler: Reconciler;
  /** Probes the driver's hosts every VRP_HOST_CHECK_INTERVAL. */
  readonly hostHealth: HostHealth;
  /** Moves services off hosts being evacuated. */
  readonly evacuator: Evacuator;
  /** Ends rescues older than VRP_RESCUE_MAX (queues their unrescue), every VRP_SCHEDULER_INTERVAL. */
  readonly rescueSweep: RescueSweep;
  /** Reads every server's interface counters every VRP_TRAFFIC_SAMPLE_INTERVAL (unless 0); applies traffic limits. */
  readonly traffic: TrafficSampler;
  /** Sends the operators' notifications, batched per VRP_NOTIFY_WINDOW, by email and operator webhooks. */
  readonly notifications: NotificationFlusher;
  stop(graceMs?: number): Promise<void>;
}

/**
 * The worker, the backup scheduler, the pruner, the webhook sender and the power-state
 * reconciler of a process that runs jobs.
 */
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
    retrySchedule: ctx.config.webhookRetrySchedule,
    metrics: ctx.metrics.webhooks,
  });
  const evacuator = createEvacuator({
    db: ctx.store.db,
    features: ctx.store.features,
    driver: driver.name,
    clock: ctx.clock,
    log,
    concurrency: ctx.config.evacuateConcurrency,
    intervalMs: ctx.config.hostCheckIntervalMs,
    onQueued: () => ctx.jobSignal.notify(),
  });
  const backups = backupDeps(ctx);
  const worker = createWorker({
    store: ctx.store,
    driver,
    backups,
    reverseDns: ctx.reverseDns,
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
    pollMs: options.pollMs ?? ctx.config.workerPollMs,
    // A job that ran has recorded events: the sender looks for their deliveries at once.
    // A migration that ended lets an evacuation start its next move at once.
    onRun: (jobId, outcome, action) => {
      deliverer.notify();
      if (action === 'migrate' && outcome !== 'lost') evacuator.wake();
      options.onRun?.(jobId, outcome);
    },
    hostWaitMs: ctx.config.hostCheckIntervalMs,
    metrics: ctx.metrics.jobs,
    powerMetrics: ctx.metrics.power,
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
    serviceConsoleMaxMs: ctx.config.serviceConsoleMaxMs,
    intervalMs: ctx.config.pruneIntervalMs,
    archive: backups.archive,
  });
  const reconciler = createReconciler({
    db: ctx.store.db,
    driver,
    clock: ctx.clock,
    log,
    metrics: ctx.metrics.power,
    intervalMs: ctx.config.reconcileIntervalMs,
  });
  const hostHealth = createHostHealth({
    db: ctx.store.db,
    driver,
    clock: ctx.clock,
    log,
    intervalMs: ctx.config.hostCheckIntervalMs,
    downAfterMs: ctx.config.hostDownAfterMs,
    onReachable: () => ctx.jobSignal.notify(),
  });
  const rescueSweep = createRescueSweep({
    db: ctx.store.db,
    clock: ctx.clock,
    log,
    maxMs: ctx.config.rescueMaxMs,
    intervalMs: ctx.config.schedulerIntervalMs,
    onQueued: () => ctx.jobSignal.notify(),
  });
  const traffic = createTrafficSampler({
    db: ctx.store.db,
    driver,
    clock: ctx.clock,
    log,
    intervalMs: ctx.config.trafficSampleIntervalMs,
    onQueued: () => ctx.jobSignal.notify(),
  });
  const { notify } = ctx.config;
  const flusher = createNotificationFlusher({
    store: ctx.store,
    clock: ctx.clock,
    log,
    secretBox: ctx.secretBox,
    lookup: ctx.lookup,
    allowPrivate: ctx.config.webhookAllowPrivate,
    mailer: notify.smtp && createSmtpMailer(notify.smtp, notify.emailFrom, notify.emailTo),
    windowMs: notify.windowMs,
  });
  // Jobs other processes queue wake the worker at once (PostgreSQL; SQLite's processes poll).
  const notifications = ctx.store.listenForQueuedJobs?.(() => ctx.jobSignal.notify(), log);
  worker.start();
  scheduler.start();
  if (ctx.config.reconcileIntervalMs > 0) reconciler.start();
  pruner.start();
  deliverer.start();
  hostHealth.start();
  evacuator.start();
  rescueSweep.start();
  if (ctx.config.trafficSampleIntervalMs > 0) traffic.start();
  flusher.start();
  const stopListening = ctx.evacuations.listen(() => evacuator.wake());
  return {
    worker,
    scheduler,
    pruner,
    deliverer,
    reconciler,
    hostHealth,
    evacuator,
    rescueSweep,
    traffic,
    notifications: flusher,
    async stop(graceMs) {
      stopListening();
      // All at once: the worker and the webhook sender take nothing new from the moment the stop
      // begins, and their grace period runs from then, not after the periodic tasks' passes
      // under way (a host probe that waits out its timeout, a reconciler's pass over many hosts).
      // Attempts under way and jobs finish side by side; both stop within the grace period.
      // Every one has stopped before this resolves, even when another failed to.
      const stopped = await Promise.allSettled([
        worker.stop(graceMs),
        deliverer.stop(Math.min(graceMs ?? 2000, 2000)),
        notifications?.close(),
        flusher.stop(),
        traffic.stop(),
        rescueSweep.stop(),
        evacuator.stop(),
        hostHealth.stop(),
        reconciler.stop(),
        pruner.stop(),
        scheduler.stop(),
      ]);
      const failed = stopped.find((x) => x.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
