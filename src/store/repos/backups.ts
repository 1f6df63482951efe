import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

export type BackupStatus = 'creating' | 'available' | 'restoring' | 'deleting' | 'failed';
export type BackupKind = 'manual' | 'scheduled';

export interface Backup {
  readonly id: string;
  readonly serviceId: string;
  readonly resellerId: string;
  readonly status: BackupStatus;
  readonly kind: BackupKind;
  readonly sizeGb: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

type Row = Database['backups'];
const toBackup = (r: Row): Backup => ({
  id: r.id,
  serviceId: r.service_id,
  resellerId: r.reseller_id,
  status: r.status,
  kind: r.kind,
  sizeGb: r.size_gb,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** The record of a backup about to be taken (`creating`, size unknown yet). */
export async function insertPendingBackup(
  db: Kysely<Database>,
  b: { id: string; serviceId: string; resellerId: string; kind: BackupKind; now: number },
): Promise<void> {
  await db
    .insertInto('backups')
    .values({
      id: b.id,
      service_id: b.serviceId,
      reseller_id: b.resellerId,
      status: 'creating',
      kind: b.kind,
      size_gb: 0,
      created_at: b.now,
      updated_at: b.now,
    })
    .execute();
}

/** A service's backups, newest first. */
export async function listBackups(db: Kysely<Database>, serviceId: string): Promise<Backup[]> {
  const rows = await db
    .selectFrom('backups')
    .selectAll()
    .where('service_id', '=', serviceId)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
  return rows.map(toBackup);
}

export async function findBackup(
  db: Kysely<Database>,
  serviceId: string,
  id: string,
): Promise<Backup | undefined> {
  const row = await db
    .selectFrom('backups')
    .selectAll()
    .where('id', '=', id)
    .where('service_id', '=', serviceId)
    .executeTakeFirst();
  return row && toBackup(row);
}

export async function setBackupStatus(
  db: Kysely<Database>,
  id: string,
  status: BackupStatus,
  now: number,
  sizeGb?: number,
): Promise<void> {
  await db
    .updateTable('backups')
    .set(sizeGb === undefined ? { status, updated_at: now } : { status, size_gb: sizeGb, updated_at: now })
    .where('id', '=', id)
    .execute();
}

export async function deleteBackupRow(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('backups').where('id', '=', id).execute();
}

/** GB the service's backups occupy (those being created count too), rounded up to 0.1 GB. */
export async function usedBackupGb(db: Kysely<Database>, serviceId: string): Promise<number> {
  const row = await db
    .selectFrom('backups')
    .select((eb) => eb.fn.sum<number>('size_gb').as('used'))
    .where('service_id', '=', serviceId)
    .where('status', '!=', 'failed')
    .executeTakeFirst();
  return Math.ceil(Number(row?.used ?? 0) * 10) / 10;
}
