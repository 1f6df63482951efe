import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** What became of a schedule's slot: a backup job was queued, or a skipped job records why not. */
export type SlotOutcome = 'queued' | 'skipped';

/**
 * One handled slot of a backup schedule. The primary key (schedule_id, slot_at) is what makes
 * each slot happen at most once, whatever the number of scheduler processes.
 */
export interface ScheduleSlot {
  readonly scheduleId: string;
  readonly slotAt: number;
  readonly serviceId: string;
  readonly jobId: string | null;
  readonly outcome: SlotOutcome;
  readonly createdAt: number;
}

/** Records a slot as handled; fails with a unique violation if it already was. */
export async function insertSlot(db: Kysely<Database>, slot: ScheduleSlot): Promise<void> {
  await db
    .insertInto('schedule_slots')
    .values({
      schedule_id: slot.scheduleId,
      slot_at: slot.slotAt,
      service_id: slot.serviceId,
      job_id: slot.jobId,
      outcome: slot.outcome,
      created_at: slot.createdAt,
    })
    .execute();
}
