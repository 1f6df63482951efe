/**
 * Backups in the backup store are chains: a full backup, then incremental ones, each carrying
 * what changed since its parent. What the backup jobs, the pruner and the operator's verify share
 * of them: finding a chain, removing a backup without breaking the backups after it.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { AppContext } from '../context.ts';
import { storedSizeGb } from '../domain/sizes.ts';
import { type BackupArchive, type BackupManifest, createArchive } from '../drivers/backup-store/archive.ts';
import { DriverError, type HypervisorDriver } from '../drivers/driver.ts';
import {
  type Backup,
  deleteBackupRow,
  expiredKeptBackups,
  findBackupById,
  findChildBackups,
  type StoredBackup,
  setBackupChain,
  setBackupStatus,
} from '../store/repos/backups.ts';
import type { Database } from '../store/schema.ts';

/** What the backup tasks need besides the driver: the store's archive and the termination rule. */
export interface BackupDeps {
  readonly archive: BackupArchive;
  /** How long a terminated service's backups are kept (VRP_BACKUP_KEEP_AFTER_TERMINATE); 0: not kept. */
  readonly keepAfterTerminateMs: number;
}

/** The backup tasks' means, from what the process shares: its backup store, key and settings. */
export function backupDeps(ctx: Pick<AppContext, 'backupStore' | 'backupKey' | 'config'>): BackupDeps {
  return {
    archive: createArchive(ctx.backupStore, ctx.backupKey),
    keepAfterTerminateMs: ctx.config.backupKeepAfterTerminateMs,
  };
}

/** The backup's row as its manifest describes it. */
export function storedOf(m: BackupManifest): StoredBackup {
  return {
    parentId: m.parentId,
    sizeGb: storedSizeGb(m.storedBytes),
    storedBytes: m.storedBytes,
    diskBytes: m.diskBytes,
  };
}

/** The manifests that restore `backupId`, the full backup first, read from the store. */
export async function chainOf(
  archive: BackupArchive,
  serviceId: string,
  backupId: string,
): Promise<BackupManifest[]> {
  const chain: BackupManifest[] = [];
  const seen = new Set<string>();
  for (let id: string | null = backupId; id !== null; ) {
    if (seen.has(id))
      throw new DriverError(`The chain of backup ${backupId} loops at ${id}`, { transient: false });
    seen.add(id);
    const m = await archive.manifest(serviceId, id);
    if (!m)
      throw new DriverError(
        id === backupId
          ? `Backup ${backupId} is not in the backup store`
          : `Backup ${backupId} needs backup ${id}, which is not in the backup store`,
        { transient: false },
      );
    chain.unshift(m);
    id = m.parentId;
  }
  return chain;
}

/**
 * The backup's children (the next backup of its chain; more than one only where a deletion
 * failed after its merge) are each rewritten to stand without it: each child's row gets its new
 * parent and size. Idempotent: a child an earlier attempt merged already has another parent in
 * its manifest, and only its row is brought up.
 */
export async function mergeIntoChild(
  db: Kysely<Database>,
  archive: BackupArchive,
  backup: Backup,
  now: number,
): Promise<void> {
  for (const child of await findChildBackups(db, backup.id)) await mergeInto(db, archive, backup, child, now);
}

async function mergeInto(
  db: Kysely<Database>,
  archive: BackupArchive,
  backup: Backup,
  child: Backup,
  now: number,
): Promise<void> {
  const childManifest = await archive.manifest(backup.serviceId, child.id);
  if (!childManifest) {
    // A child being deleted whose objects left the store already needs nothing of this backup.
    if (child.status === 'deleting') return;
    // Any other child without its manifest (lost from the store, or torn by a replace that did
    // not complete) may still have its data objects, and needs this backup's: it is kept.
    throw new DriverError(
      `Backup ${child.id}, taken after backup ${backup.id}, has no manifest in the backup store: ${backup.id} is kept`,
      { transient: false },
    );
  }
  let merged = childManifest;
  if (childManifest.parentId === backup.id) {
    const parent = await archive.manifest(backup.serviceId, backup.id);
    if (!parent)
      throw new DriverError(
        `Backup ${backup.id} is not in the backup store: backup ${child.id} cannot stand alone`,
        {
          transient: false,
        },
      );
    merged = await archive.mergeIntoChild(parent, childManifest);
  }
  await setBackupChain(db, child.id, storedOf(merged), now);
}

/**
 * Removes a backup and nothing else: the backup after it (if any) is merged first, so it stays
 * restorable; then its objects, the VM's checkpoint of it, its row. A legacy backup (taken on the
 * host before the backup store) is deleted by the driver.
 */
export async function removeBackup(
  db: Kysely<Database>,
  deps: { readonly archive: BackupArchive; readonly driver: HypervisorDriver },
  backup: Backup,
  now: number,
): Promise<void> {
  if (backup.format === 'legacy') {
    await deps.driver.deleteLegacyBackup(backup.serviceId, backup.id);
  } else {
    await mergeIntoChild(db, deps.archive, backup, now);
    await deps.archive.remove(backup.serviceId, backup.id);
    await deps.driver.dropCheckpoint(backup.serviceId, backup.id);
  }
  await deleteBackupRow(db, backup.id);
}

/**
 * Whether the backup's objects have left the store (after its merge, the manifest first). A
 * store that cannot say (or a manifest it cannot read) is `unanswered`, and they count as there.
 */
async function objectsGone(
  db: Kysely<Database>,
  archive: BackupArchive,
  backup: Backup,
  unanswered: (err: unknown) => void,
): Promise<boolean> {
  if (backup.format !== 'archive' || (await findChildBackups(db, backup.id)).length > 0) return false;
  return archive.manifest(backup.serviceId, backup.id).then(
    (m) => m === undefined,
    (err: unknown) => {
      unanswered(err);
      return false;
    },
  );
}

/** What a backup whose objects left the store is: `failed`, 0 GB (nothing of it to restore). */
const settleGone = (db: Kysely<Database>, backup: Backup, now: number, unchanged?: Backup) =>
  setBackupStatus(db, backup.id, 'failed', now, 0, unchanged);

/**
 * Settles a backup whose removal failed: `failed` (0 GB) if its objects had already left the
 * store, else `available` again, as it was.
 */
export async function settleUnremoved(
  db: Kysely<Database>,
  archive: BackupArchive,
  backup: Backup,
  now: number,
): Promise<void> {
  if (await objectsGone(db, archive, backup, () => {})) await settleGone(db, backup, now);
  else await setBackupStatus(db, backup.id, 'available', now);
}

/**
 * Settles a backup that the end of its deletion's job put back `available` without the task (its
 * attempts all died, or the service's state no longer allowed it: run-job.ts), an end that looks
 * in no store: as settleUnremoved would, `failed` (0 GB) if an attempt had removed its objects
 * already, and only while it is still as that end left it (a later job's change stands). A store
 * (or database) that does not answer leaves it `available`, with a warning: the next deletion or
 * a restore finds out.
 */
export async function settleGivenUp(
  db: Kysely<Database>,
  archive: BackupArchive,
  backup: Backup,
  now: number,
  log: Pick<FastifyBaseLogger, 'warn'>,
): Promise<void> {
  const warn = (err: unknown) =>
    log.warn(
      { err, backupId: backup.id },
      'could not tell whether a backup whose deletion was given up is still in the backup store; it stays available',
    );
  try {
    if (await objectsGone(db, archive, backup, warn)) await settleGone(db, backup, now, backup);
  } catch (err) {
    warn(err);
  }
}

/**
 * A backup the end of its job settled without the task (run-job.ts: every attempt's process died,
 * or the service's state no longer allowed it), as that end left it: a backup_delete's `available`
 * again, a backup_create's `failed` (0 GB).
 */
export interface GivenUpBackup {
  readonly action: 'backup_create' | 'backup_delete';
  readonly backup: Backup;
}

/**
 * What the worker does after such an end (whose transaction looks in no store): a deletion's
 * backup is settled (settleGivenUp); a creation's loses what its attempts wrote to the store
 * (removeGivenUpObjects).
 */
export async function afterGivenUp(
  db: Kysely<Database>,
  archive: BackupArchive,
  given: GivenUpBackup,
  now: number,
  log: Pick<FastifyBaseLogger, 'warn'>,
): Promise<void> {
  if (given.action === 'backup_delete') await settleGivenUp(db, archive, given.backup, now, log);
  else await removeGivenUpObjects(db, archive, given.backup, log);
}

/**
 * Before the end of a backup_create given up without its task, while its job still holds the
 * service: what its dead attempts' export may have left on the host is cleared (the driver's
 * `abandonExport`: the guest thawed if it was left frozen, a stopped VM's paused domain powered
 * off, the temporary volume, the checkpoint an attempt may have committed), if the backup is still
 * `creating` (the end then makes it `failed`; a backup that became `available` keeps its
 * checkpoint, the next backup's base). Done before the end, not after: the driver may start a
 * stopped VM paused to drop the checkpoint, which the service's next job must not meet. A host
 * that does not answer leaves it, with a warning: the backup's deletion drops the checkpoint.
 */
export async function abandonGivenUpExport(
  db: Kysely<Database>,
  driver: Pick<HypervisorDriver, 'abandonExport'>,
  backupId: string,
  log: Pick<FastifyBaseLogger, 'warn'>,
): Promise<void> {
  try {
    const backup = await findBackupById(db, backupId);
    if (backup?.status !== 'creating' || backup.format !== 'archive') return;
    await driver.abandonExport(backup.serviceId, backup.id);
  } catch (err) {
    log.warn(
      { err, backupId },
      "could not clear what a backup whose creation was given up left on the server; the backup's deletion drops its checkpoint",
    );
  }
}

/**
 * Removes from the store what the attempts of a backup_create given up without its task wrote
 * (its data, its manifest even): a `failed` backup counts for nothing, and its objects would stay
 * there, outside any quota, until its record is deleted. Only while the backup is still as the
 * job's end left it (a later change stands: a deletion accepted since removes it itself) and no
 * backup stands on it (none can: a backup is taken against an `available` one, and
 * findChildBackups counts no `failed` child). A store (or database) that does not answer leaves
 * them, with a warning: the record's deletion removes them.
 */
export async function removeGivenUpObjects(
  db: Kysely<Database>,
  archive: BackupArchive,
  backup: Backup,
  log: Pick<FastifyBaseLogger, 'warn'>,
): Promise<void> {
  try {
    const current = await findBackupById(db, backup.id);
    if (
      current?.status !== 'failed' ||
      current.updatedAt !== backup.updatedAt ||
      current.format !== 'archive' ||
      (await findChildBackups(db, backup.id)).length > 0
    )
      return;
    await archive.remove(backup.serviceId, backup.id);
  } catch (err) {
    log.warn(
      { err, backupId: backup.id },
      "could not remove from the backup store what was written of a backup whose creation was given up; the backup's deletion removes it",
    );
  }
}

/**
 * Removes up to `limit` backups of terminated services whose keeping time is over (newest
 * first: a chain goes child first, so nothing is merged). Returns how many went.
 */
export async function pruneKeptBackups(
  db: Kysely<Database>,
  archive: BackupArchive,
  now: number,
  limit: number,
): Promise<number> {
  const expired = await expiredKeptBackups(db, now, limit);
  for (const b of expired) {
    if (b.format === 'archive') await archive.remove(b.serviceId, b.id);
    await deleteBackupRow(db, b.id);
  }
  return expired.length;
}
