import type { Kysely } from 'kysely';
import type { BackupScheduleTable, Database } from '../schema.ts';

export interface BackupSchedule {
  readonly id: string;
  readonly serviceId: string;
  readonly resellerId: string;
  readonly bsTime: string;
  readonly bsDays: string;
  readonly nextRunAt: number;
  readonly createdAt: number;
}

export const toSchedule = (r: BackupScheduleTable): BackupSchedule => ({
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
