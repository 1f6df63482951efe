import type { Kysely, Selectable } from 'kysely';
import { dialectOf } from '../dialect-of.ts';
import type { BackupFormat, Database } from '../schema.ts';

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
  /** `archive`: in the backup store; `legacy`: taken by the driver on its host before it. */
  readonly format: BackupFormat;
  /** The backup an incremental one is relative to; null for a full one. */
  readonly parentId: string | null;
  readonly storedBytes: number;
  readonly diskBytes: number;
  /** Where it was taken (informational). */
  readonly hostId: string | null;
  /** Kept past its service's termination until then; else null. */
  readonly keepUntil: number | null;
}

type Row = Selectable<Database['backups']>;
const toBackup = (r: Row): Backup => ({
  id: r.id,
  serviceId: r.service_id,
  resellerId: r.reseller_id,
  status: r.status,
  kind: r.kind,
  sizeGb: r.size_gb,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  format: r.format,
  parentId: r.parent_id,
  storedBytes: r.stored_bytes,
  diskBytes: r.disk_bytes,
  hostId: r.host_id,
  keepUntil: r.keep_until,
});

/** The record of a backup about to be taken into the backup store (`creating`, size unknown yet). */
export async function insertPendingBackup(
  db: Kysely<Database>,
  b: {
    id: string;
    serviceId: string;
    resellerId: string;
    kind: BackupKind;
    hostId: string | null;
    now: number;
  },
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
      format: 'archive',
      host_id: b.hostId,
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

const serviceBackup = (db: Kysely<Database>, serviceId: string, id: string) =>
  db.selectFrom('backups').selectAll().where('id', '=', id).where('service_id', '=', serviceId);

export async function findBackup(
  db: Kysely<Database>,
  serviceId: string,
  id: string,
): Promise<Backup | undefined> {
  const row = await serviceBackup(db, serviceId, id).executeTakeFirst();
  return row && toBackup(row);
}

/**
 * The backup as findBackup reads it, its row locked to the end of the transaction `tx`
 * (PostgreSQL; SQLite's write transactions run one at a time and need no lock). A concurrent
 * change to it is waited for and read.
 */
export async function lockBackup(
  tx: Kysely<Database>,
  serviceId: string,
  id: string,
): Promise<Backup | undefined> {
  const row = await serviceBackup(tx, serviceId, id)
    .$if(dialectOf(tx) === 'postgres', (q) => q.forUpdate())
    .executeTakeFirst();
  return row && toBackup(row);
}

/** A queued or running job of a service that names one of its backups. */
export interface BackupJobRef {
  readonly backupId: string;
  readonly action: 'backup_restore' | 'backup_delete';
}

/**
 * The service's queued and running restores and deletions, each with the backup it names (its
 * `params.backup_id`): the backups rotation must leave in place (jobs/tasks/backup-create.ts).
 */
export async function backupsNamedByPendingJobs(
  db: Kysely<Database>,
  serviceId: string,
): Promise<BackupJobRef[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(['action', 'params'])
    .where('service_id', '=', serviceId)
    .where('status', 'in', ['queued', 'running'])
    .where('action', 'in', ['backup_restore', 'backup_delete'])
    .execute();
  const refs: BackupJobRef[] = [];
  for (const r of rows) {
    if (r.action !== 'backup_restore' && r.action !== 'backup_delete') continue;
    const params: unknown = JSON.parse(r.params);
    if (typeof params !== 'object' || params === null || !('backup_id' in params)) continue;
    if (typeof params.backup_id === 'string') refs.push({ backupId: params.backup_id, action: r.action });
  }
  return refs;
}

/** A backup by its id alone (the operator's view: any service's). */
export async function findBackupById(db: Kysely<Database>, id: string): Promise<Backup | undefined> {
  const row = await db.selectFrom('backups').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toBackup(row);
}

/** What the backup store holds of a backup: its place in the chain and its size. */
export interface StoredBackup {
  readonly parentId: string | null;
  readonly sizeGb: number;
  readonly storedBytes: number;
  readonly diskBytes: number;
}

/** The backup's parent was merged into it: its new place in the chain and its new size. */
export async function setBackupChain(
  db: Kysely<Database>,
  id: string,
  stored: StoredBackup,
  now: number,
): Promise<void> {
  await db
    .updateTable('backups')
    .set({
      parent_id: stored.parentId,
      size_gb: stored.sizeGb,
      stored_bytes: stored.storedBytes,
      disk_bytes: stored.diskBytes,
      updated_at: now,
    })
    .where('id', '=', id)
    .execute();
}

/**
 * The backups whose parent is `id` and that did not fail, oldest first. A chain is a line as a
 * rule (a backup is taken against the newest one), but a deletion that failed after it merged
 * its backup into the next leaves that backup beside the next, both on the same parent.
 */
export async function findChildBackups(db: Kysely<Database>, id: string): Promise<Backup[]> {
  const rows = await db
    .selectFrom('backups')
    .selectAll()
    .where('parent_id', '=', id)
    .where('status', '!=', 'failed')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toBackup);
}

/** The service's backups are kept until `keepUntil` (its termination), then pruned. */
export async function keepBackupsUntil(
  db: Kysely<Database>,
  serviceId: string,
  keepUntil: number,
  now: number,
): Promise<void> {
  await db
    .updateTable('backups')
    .set({ keep_until: keepUntil, updated_at: now })
    .where('service_id', '=', serviceId)
    .execute();
}

/**
 * Up to `limit` backups kept past their service's end whose time is over, children first. Only a
 * terminated service's: a terminate that failed after setting `keep_until` leaves the service
 * running, its later backups chained on the kept ones, and none of them may go.
 */
export async function expiredKeptBackups(
  db: Kysely<Database>,
  now: number,
  limit: number,
): Promise<Backup[]> {
  const rows = await db
    .selectFrom('backups')
    .innerJoin('services', 'services.id', 'backups.service_id')
    .selectAll('backups')
    .where('services.status', '=', 'terminated')
    .where('backups.keep_until', 'is not', null)
    .where('backups.keep_until', '<=', now)
    .orderBy('backups.created_at', 'desc')
    .orderBy('backups.id')
    .limit(limit)
    .execute();
  return rows.map(toBackup);
}

/**
 * Sets the backup's status (and size). `unchanged`: only if it still has that status (and, with
 * `updatedAt`, was last changed then): a later change stands.
 */
export async function setBackupStatus(
  db: Kysely<Database>,
  id: string,
  status: BackupStatus,
  now: number,
  sizeGb?: number,
  unchanged?: Pick<Backup, 'status'> & Partial<Pick<Backup, 'updatedAt'>>,
): Promise<void> {
  let update = db
    .updateTable('backups')
    .set(sizeGb === undefined ? { status, updated_at: now } : { status, size_gb: sizeGb, updated_at: now })
    .where('id', '=', id);
  if (unchanged) update = update.where('status', '=', unchanged.status);
  if (unchanged?.updatedAt !== undefined) update = update.where('updated_at', '=', unchanged.updatedAt);
  await update.execute();
}

/**
 * Marks the backup `deleting` if it is `available` (and only then: true). Rotation's hold on a
 * backup it is about to remove, which a restore's or a deletion's acceptance refuses.
 */
export async function markBackupDeleting(db: Kysely<Database>, id: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('backups')
    .set({ status: 'deleting', updated_at: now })
    .where('id', '=', id)
    .where('status', '=', 'available')
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
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
