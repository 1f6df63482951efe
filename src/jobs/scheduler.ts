import type { FastifyBaseLogger } from 'fastify';
import type { Transaction } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import { jobFinished } from '../domain/events.ts';
import { nextRunAt, parseBsDays, parseBsTime, slotAfter, slotsBetween } from '../domain/schedules.ts';
import type { JobSignal } from '../loop/signal.ts';
import type { Store } from '../store/database.ts';
import { isStoreUnavailable, isUniqueViolation } from '../store/errors.ts';
import { systemPart } from '../store/repos/audit.ts';
import { advanceSchedule, type BackupSchedule, dueSchedules } from '../store/repos/backup-schedules.ts';
import { recordEvents } from '../store/repos/events.ts';
import { insertJob, newJobId } from '../store/repos/jobs.ts';
import { insertSlot, type SlotOutcome } from '../store/repos/schedule-slots.ts';
import type { Database } from '../store/schema.ts';
import { backupCreateOperation } from './backup-operation.ts';
import { createPeriodic } from './periodic.ts';
import { enqueueInTransaction, SeqConflict } from './queue.ts';

export interface SchedulerOptions {
  readonly store: Store;
  /** The server's clock: every schedule time (slots, next_run_at, job times) comes from it. */
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** Notified when a backup job is queued, so this process's worker picks it up at once. */
  readonly signal: JobSignal;
  /** A slot older than this when first seen (the server was down) is skipped, not run. */
  readonly graceMs: number;
  readonly intervalMs: number;
}

/**
 * What a tick did with one due schedule: `queued` or `skipped` (this process handled the slot),
 * `taken` (another process had handled it), `retry` (a concurrent change to the service won;
 * the slot is still due and is handled next tick), `failed` (an unexpected error, logged).
 */
export type TickOutcome = SlotOutcome | 'taken' | 'retry' | 'failed';

export interface Scheduler {
  /** Handles every due slot once; returns what happened to each (for tests). */
  tick(): Promise<TickOutcome[]>;
  start(): void;
  stop(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const BATCH = 100;
/** How many missed slots of one schedule an outage message counts at most. */
const MISSED_COUNT_LIMIT = 1000;

/**
 * Turns due schedule slots into backup jobs exactly once, whatever the number of processes:
 * the compare-and-set on the schedule's next_run_at and the slot's row (primary key
 * schedule_id + slot_at) are written in the same transaction as the job, so one process wins
 * each slot, and a restart never replays one.
 */
export function createScheduler(o: SchedulerOptions): Scheduler {
  const db = o.store.db;

  /**
   * A job that records why a slot made no backup. Like every job it takes the service's next
   * sequence number (compare-and-set), but it waits for nothing: pending_jobs stays as it is.
   */
  async function recordSkipped(
    tx: Transaction<Database>,
    s: BackupSchedule,
    slot: number,
    reason: string,
    now: number,
  ): Promise<string | null> {
    const service = await tx
      .selectFrom('services')
      .select(['job_seq'])
      .where('id', '=', s.serviceId)
      .executeTakeFirst();
    if (!service) return null;
    const seq = service.job_seq + 1;
    const r = await tx
      .updateTable('services')
      .set({ job_seq: seq })
      .where('id', '=', s.serviceId)
      .where('job_seq', '=', service.job_seq)
      .executeTakeFirst();
    if (r.numUpdatedRows === 0n) throw new SeqConflict();
    const job = await insertJob(tx, {
      id: newJobId(Date.now()),
      serviceId: s.serviceId,
      resellerId: s.resellerId,
      action: 'backup_create',
      params: { kind: 'scheduled', schedule_id: s.id, slot_at: slot },
      seq,
      now,
      skipped: { reason },
      startedBy: systemPart('scheduler'),
    });
    // A skipped job is a finished one: it is told like any other.
    await recordEvents(tx, s.resellerId, [jobFinished(job, 'skipped', reason)], now);
    o.log.info(
      { serviceId: s.serviceId, scheduleId: s.id, slot: iso(slot), reason },
      'scheduled backup skipped',
    );
    return job.id;
  }

  /** Queues the slot's backup, or records why the service refuses it. */
  async function runSlot(
    tx: Transaction<Database>,
    s: BackupSchedule,
    slot: number,
    now: number,
  ): Promise<{ outcome: SlotOutcome; jobId: string | null }> {
    let refusal: string;
    try {
      const r = await enqueueInTransaction(
        tx,
        {
          resellerId: s.resellerId,
          serviceId: s.serviceId,
          ...backupCreateOperation('scheduled', { scheduleId: s.id, slotAt: slot }),
          startedBy: systemPart('scheduler'),
        },
        now,
      );
      if (r.kind === 'queued') return { outcome: 'queued', jobId: r.job.id };
      refusal = r.message;
    } catch (err) {
      // ApiErrors are thrown before enqueueInTransaction writes anything, so the transaction is clean.
      if (!(err instanceof ApiError)) throw err;
      refusal = err.message;
    }
    // Suspended, terminated, busy, out of quota: recorded once, never queued forever.
    const reason = `Scheduled backup of ${iso(slot)} skipped: ${refusal}`;
    return { outcome: 'skipped', jobId: await recordSkipped(tx, s, slot, reason, now) };
  }

  async function handle(s: BackupSchedule, now: number): Promise<TickOutcome> {
    const time = parseBsTime(s.bsTime);
    const days = parseBsDays(s.bsDays);
    const slot = s.nextRunAt;
    const missed = now - slot > o.graceMs;
    let next = slotAfter(time, days, slot);
    if (missed) {
      // After an outage, move on to the first slot still inside the grace period (it runs) or
      // the first one after now: the slots in between are not replayed one by one.
      next = Math.max(next, nextRunAt(time, days, now - o.graceMs));
      if (now - next > o.graceMs) next = slotAfter(time, days, next);
    }
    return db.transaction().execute(async (tx) => {
      if (!(await advanceSchedule(tx, s.id, slot, next))) return 'taken';
      const done = await tx
        .selectFrom('schedule_slots')
        .select('outcome')
        .where('schedule_id', '=', s.id)
        .where('slot_at', '=', slot)
        .executeTakeFirst();
      // Handled already (cannot happen while next_run_at only moves forward): just move on.
      if (done) return 'taken';
      let result: { outcome: SlotOutcome; jobId: string | null };
      if (missed) {
        const later = slotsBetween(time, days, slot + 1, next, MISSED_COUNT_LIMIT);
        const last = later.at(-1);
        const more =
          last === undefined
            ? ''
            : ` (with ${later.length === MISSED_COUNT_LIMIT ? 'at least ' : ''}${later.length} later slot${later.length === 1 ? '' : 's'} up to ${iso(last)})`;
        o.log.warn({ scheduleId: s.id, slot: iso(slot), missed: 1 + later.length }, 'backup slots missed');
        const reason = `Scheduled backup of ${iso(slot)} missed while the server was down${more}`;
        result = { outcome: 'skipped', jobId: await recordSkipped(tx, s, slot, reason, now) };
      } else {
        result = await runSlot(tx, s, slot, now);
      }
      await insertSlot(tx, {
        scheduleId: s.id,
        slotAt: slot,
        serviceId: s.serviceId,
        jobId: result.jobId,
        outcome: result.outcome,
        createdAt: now,
      });
      return result.outcome;
    });
  }

  async function tick(): Promise<TickOutcome[]> {
    const outcomes: TickOutcome[] = [];
    for (;;) {
      const now = o.clock.now();
      const due = await dueSchedules(db, now, BATCH);
      if (due.length === 0) break;
      let progressed = false;
      for (const s of due) {
        let outcome: TickOutcome;
        try {
          outcome = await handle(s, now);
        } catch (err) {
          if (err instanceof SeqConflict) outcome = 'retry';
          else if (isUniqueViolation(err)) outcome = 'taken';
          else if (isStoreUnavailable(err)) throw err;
          else {
            // One broken schedule must not hold up the others; it is tried again next tick.
            o.log.error({ err, scheduleId: s.id }, 'scheduled backup slot failed');
            outcome = 'failed';
          }
        }
        outcomes.push(outcome);
        if (outcome === 'queued') o.signal.notify();
        if (outcome === 'queued' || outcome === 'skipped') progressed = true;
      }
      if (!progressed || due.length < BATCH) break;
    }
    return outcomes;
  }

  const periodic = createPeriodic({ pass: tick, intervalMs: o.intervalMs, name: 'scheduler', log: o.log });

  return {
    tick,
    start: () => periodic.start(),
    stop: () => periodic.stop(),
  };
}
