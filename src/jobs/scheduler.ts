import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Transaction } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import { nextRunAt, parseBsDays, parseBsTime, slotAfter } from '../domain/schedules.ts';
import type { Store } from '../store/database.ts';
import { isStoreUnavailable, isUniqueViolation } from '../store/errors.ts';
import { type BackupSchedule, dueSchedules } from '../store/repos/backup-schedules.ts';
import { insertPendingBackup } from '../store/repos/backups.ts';
import type { Database } from '../store/schema.ts';
import { checkBackupQuota } from './backup-quota.ts';
import { enqueueInTransaction, SeqConflict } from './queue.ts';
import type { JobSignal } from './signal.ts';

export interface SchedulerOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  readonly signal: JobSignal;
  /** A slot older than this when first seen (the server was down) is skipped, not run. */
  readonly graceMs: number;
  readonly intervalMs: number;
}

export type SlotOutcome = 'queued' | 'skipped' | 'taken';

export interface Scheduler {
  /** Handles every due slot once; returns what happened to each (for tests). */
  tick(): Promise<SlotOutcome[]>;
  start(): void;
  stop(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Turns due schedule slots into backup jobs exactly once, whatever the number of processes:
 * the slot's row (primary key schedule_id + slot_at) and the compare-and-set on the schedule's
 * next_run_at are written in the same transaction as the job, so one process wins each slot.
 */
export function createScheduler(o: SchedulerOptions): Scheduler {
  const db = o.store.db;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = true;

  async function recordSkipped(tx: Transaction<Database>, s: BackupSchedule, reason: string, now: number) {
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
    const id = randomUUID();
    await tx
      .insertInto('jobs')
      .values({
        id,
        service_id: s.serviceId,
        reseller_id: s.resellerId,
        action: 'backup_create',
        params: JSON.stringify({ kind: 'scheduled', schedule_id: s.id }),
        status: 'skipped',
        error: reason,
        attempts: 0,
        seq,
        run_at: now,
        created_at: now,
        started_at: null,
        finished_at: now,
        locked_by: null,
        locked_until: null,
      })
      .execute();
    return id;
  }

  async function handle(s: BackupSchedule, now: number): Promise<SlotOutcome> {
    const time = parseBsTime(s.bsTime);
    const days = parseBsDays(s.bsDays);
    const slot = s.nextRunAt;
    const missed = now - slot > o.graceMs;
    // After an outage, jump to the first slot still inside the grace period (or the next one).
    const next = missed
      ? nextRunAt(time, days, Math.max(slotAfter(time, days, slot), now - o.graceMs))
      : slotAfter(time, days, slot);
    return db.transaction().execute(async (tx) => {
      const taken = await tx
        .updateTable('backup_schedules')
        .set({ next_run_at: next })
        .where('id', '=', s.id)
        .where('next_run_at', '=', slot)
        .executeTakeFirst();
      if (taken.numUpdatedRows === 0n) return 'taken';
      let jobId: string | null;
      let outcome: SlotOutcome;
      if (missed) {
        jobId = await recordSkipped(
          tx,
          s,
          `Scheduled backup of ${iso(slot)} missed while the server was down`,
          now,
        );
        outcome = 'skipped';
      } else {
        const backupId = randomUUID();
        try {
          const r = await enqueueInTransaction(
            tx,
            {
              resellerId: s.resellerId,
              serviceId: s.serviceId,
              action: 'backup_create',
              params: { backup_id: backupId, kind: 'scheduled', schedule_id: s.id, slot_at: slot },
              check: (service, t) => checkBackupQuota(t, service),
              apply: async (t, job, service) => {
                await insertPendingBackup(t, {
                  id: backupId,
                  serviceId: service.id,
                  resellerId: service.resellerId,
                  kind: 'scheduled',
                  now: job.createdAt,
                });
              },
            },
            now,
          );
          jobId = r.kind === 'queued' ? r.job.id : null;
          outcome = 'queued';
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          // The service refuses it now (suspended, busy, out of quota): record why, do not retry forever.
          jobId = await recordSkipped(tx, s, `Scheduled backup of ${iso(slot)} skipped: ${err.message}`, now);
          outcome = 'skipped';
        }
      }
      await tx
        .insertInto('schedule_slots')
        .values({
          schedule_id: s.id,
          slot_at: slot,
          service_id: s.serviceId,
          job_id: jobId,
          outcome,
          created_at: now,
        })
        .execute();
      return outcome;
    });
  }

  async function tick(): Promise<SlotOutcome[]> {
    const outcomes: SlotOutcome[] = [];
    for (;;) {
      const now = o.clock.now();
      const due = await dueSchedules(db, now, 100);
      if (due.length === 0) break;
      let progressed = false;
      for (const s of due) {
        try {
          const outcome = await handle(s, now);
          outcomes.push(outcome);
          if (outcome !== 'taken') progressed = true;
        } catch (err) {
          // Another process took the slot or changed the service first: look again next tick.
          if (err instanceof SeqConflict || isUniqueViolation(err)) outcomes.push('taken');
          else throw err;
        }
      }
      if (outcomes.some((x) => x === 'queued')) o.signal.notify();
      if (!progressed || due.length < 100) break;
    }
    return outcomes;
  }

  const loop = () => {
    if (stopped) return;
    running = tick()
      .catch((err) => {
        if (isStoreUnavailable(err)) o.log.warn({ msg: String(err) }, 'scheduler: store unavailable');
        else o.log.error({ err }, 'scheduler tick failed');
      })
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(loop, o.intervalMs);
      });
  };

  return {
    tick,
    start() {
      if (!stopped) return;
      stopped = false;
      loop();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
