import type { Kysely, Transaction } from 'kysely';
import type { BackupScheduleTable, Database } from '../schema.ts';
import { findService, type Service } from './services.ts';

export interface BackupSchedule {
  readonly id: string;
  readonly serviceId: string;
  readonly resellerId: string;
  readonly bsTime: string;
  readonly bsDays: string;
  readonly nextRunAt: number;
  readonly createdAt: number;
}

const toSchedule = (r: BackupScheduleTable): BackupSchedule => ({
  id: r.id,
  serviceId: r.service_id,
  resellerId: r.reseller_id,
  bsTime: r.bs_time,
  bsDays: r.bs_days,
  nextRunAt: r.next_run_at,
  createdAt: r.created_at,
});

export async function listSchedules(db: Kysely<Database>, serviceId: string): Promise<BackupSchedule[]> {
  const rows = await db
    .selectFrom('backup_schedules')
    .selectAll()
    .where('service_id', '=', serviceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toSchedule);
}

export async function insertSchedule(db: Kysely<Database>, row: BackupScheduleTable): Promise<void> {
  await db.insertInto('backup_schedules').values(row).execute();
}

export async function deleteSchedule(db: Kysely<Database>, serviceId: string, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('backup_schedules')
    .where('id', '=', id)
    .where('service_id', '=', serviceId)
    .executeTakeFirst();
  return r.numDeletedRows > 0n;
}

/** Schedules whose next slot has come, oldest first. */
export async function dueSchedules(
  db: Kysely<Database>,
  now: number,
  limit: number,
): Promise<BackupSchedule[]> {
  const rows = await db
    .selectFrom('backup_schedules')
    .selectAll()
    .where('next_run_at', '<=', now)
    .orderBy('next_run_at')
    .limit(limit)
    .execute();
  return rows.map(toSchedule);
}

/**
 * Takes the service row's write lock for the rest of the transaction and reads the service:
 * schedule changes of one service are serialised, so the per-service cap holds under
 * concurrent requests. (A no-op update locks the row on PostgreSQL; SQLite's write
 * transactions, opened with BEGIN IMMEDIATE, are serialised already.) The job sequence is
 * left as it is, so concurrent job requests are not disturbed.
 */
export async function lockServiceForSchedules(
  tx: Transaction<Database>,
  serviceId: string,
): Promise<Service | undefined> {
  await tx
    .updateTable('services')
    .set((eb) => ({ job_seq: eb.ref('job_seq') }))
    .where('id', '=', serviceId)
    .execute();
  return findService(tx, serviceId);
}

/** Moves a schedule on from `slotAt` to `nextRunAt`, only if no one else did: did it win? */
export async function advanceSchedule(
  db: Kysely<Database>,
  id: string,
  slotAt: number,
  nextRunAt: number,
): Promise<boolean> {
  const r = await db
    .updateTable('backup_schedules')
    .set({ next_run_at: nextRunAt })
    .where('id', '=', id)
    .where('next_run_at', '=', slotAt)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}
