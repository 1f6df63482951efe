import { setImmediate } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../domain/clock.ts';
import type { BackupArchive } from '../drivers/backup-store/archive.ts';
import type { Store } from '../store/database.ts';
import { IDEMPOTENCY_TTL_MS } from '../store/repos/idempotency-keys.ts';
import { PRUNE_KINDS, type PrunedCounts, pruneBatch } from '../store/repos/retention.ts';
import { pruneKeptBackups } from './backup-chain.ts';
import { createPeriodic } from './periodic.ts';

export interface PrunerOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** Finished jobs and handled schedule slots older than this go. */
  readonly retentionMs: number;
  /** Audit log entries older than this go. */
  readonly auditRetentionMs: number;
  /** Events and webhook deliveries older than this go. */
  readonly eventRetentionMs: number;
  /** How long a customer's console session lasts at most (VRP_CONSOLE_SESSION_MAX): its link goes after. */
  readonly serviceConsoleMaxMs: number;
  /** Time between runs. */
  readonly intervalMs: number;
  /** Rows per delete statement: each is its own short transaction. */
  readonly batch?: number;
  /**
   * The backup store's archive: backups kept past their service's termination
   * (VRP_BACKUP_KEEP_AFTER_TERMINATE) go from it once their time is over. Without it, none go.
   */
  readonly archive?: BackupArchive;
}

export interface Pruner {
  /** One full pass: batches until nothing old is left. Returns what it removed. */
  run(): Promise<PrunedCounts>;
  start(): void;
  stop(): Promise<void>;
}

/**
 * Keeps the store from growing for ever: finished jobs and handled schedule slots after the
 * retention period, idempotency keys after their 24 hours, audit entries, events and webhook
 * deliveries after theirs, console sessions once they expired, console links once the longest
 * session they could have opened is over, the backups of terminated services
 * once their keeping time is over. It deletes in small batches, each its
 * own statement, and yields between them, so no lock is held for long and requests go on. Any
 * number of processes may run it at once: a row deleted by one is simply not found by another.
 */
export function createPruner(o: PrunerOptions): Pruner {
  const batch = o.batch ?? 500;
  /** Set by stop(): a pass under way ends after its current batch. */
  let closing = false;

  async function drain(step: () => Promise<number>): Promise<number> {
    let total = 0;
    for (;;) {
      if (closing) return total;
      const n = await step();
      total += n;
      if (n < batch) return total;
      await setImmediate();
    }
  }

  async function run(): Promise<PrunedCounts> {
    const db = o.store.db;
    const now = o.clock.now();
    const before = now - o.retentionMs;
    const eventsBefore = now - o.eventRetentionMs;
    const cutoffs: PrunedCounts = {
      jobs: before,
      scheduleSlots: before,
      idempotencyKeys: now - IDEMPOTENCY_TTL_MS,
      auditEntries: now - o.auditRetentionMs,
      events: eventsBefore,
      webhookDeliveries: eventsBefore,
      consoleSessions: now,
      serviceConsoleLinks: now - o.serviceConsoleMaxMs,
    };
    // Each kind in turn, in batches: one statement at a time on the store.
    const counts: PrunedCounts = { ...cutoffs };
    for (const kind of PRUNE_KINDS)
      counts[kind] = await drain(() => pruneBatch(db, kind, cutoffs[kind], batch));
    if (Object.values(counts).some((n) => n > 0)) o.log.info({ ...counts }, 'pruned old records');
    const archive = o.archive;
    if (archive) {
      const backups = await drain(() => pruneKeptBackups(db, archive, now, batch));
      if (backups > 0) o.log.info({ backups }, 'pruned the backups of terminated services');
    }
    return counts;
  }

  const periodic = createPeriodic({
    pass: run,
    intervalMs: o.intervalMs,
    // The first pass soon after start, so a store that was down a long time is cleaned early.
    firstDelayMs: Math.min(o.intervalMs, 60_000),
    name: 'pruner',
    log: o.log,
  });

  return {
    run,
    start() {
      closing = false;
      periodic.start();
    },
    async stop() {
      closing = true;
      await periodic.stop();
    },
  };
}
