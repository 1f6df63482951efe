import { messageOf } from '../../domain/errors.ts';
import { sumGb } from '../../domain/sizes.ts';
import type { BackupManifest } from '../../drivers/backup-store/archive.ts';
import { DriverError } from '../../drivers/driver.ts';
import { checkFence, FenceDown } from '../../drivers/fence.ts';
import {
  type Backup,
  backupsNamedByPendingJobs,
  findBackup,
  listBackups,
  markBackupDeleting,
  setBackupChain,
  setBackupStatus,
} from '../../store/repos/backups.ts';
import { mergeIntoChild, removeBackup, settleUnremoved, storedOf } from '../backup-chain.ts';
import { planRotation } from '../backup-quota.ts';
import type { Task, TaskContext } from '../task.ts';

/**
 * Takes the backup into the backup store (incremental against the service's newest backup when
 * its host still has that point), then keeps the service within its backup quota: the oldest
 * scheduled backups are rotated out, each merged into the backup after it first; if that cannot
 * make room, the new backup is discarded, every old one kept, and the job fails.
 */
export const backupCreate: Task<'backup_create'> = async (tc) => {
  const { service, db, clock, job, signal, backups } = tc;
  const backupId = job.params.backup_id;
  // Only the record of a skipped slot has none, and it never runs.
  if (!backupId) throw new DriverError('This backup job names no backup', { transient: false });
  const backup = await findBackup(db, service.id, backupId);
  if (!backup) throw new DriverError(`Backup ${backupId} no longer exists`, { transient: false });
  try {
    const manifest = await take(tc, backup);
    await rotate(tc, backup, manifest);
  } catch (err) {
    // A transient error or a shutdown: the job runs again (a backup whose manifest is stored is
    // not taken twice). Otherwise, or on the last attempt, nothing of it counts.
    const last = job.attempts >= tc.maxAttempts;
    if (!signal.aborted && (!(err instanceof DriverError && err.transient) || last)) {
      // Not by a run whose lease ran out: the job may be another run's now (fence.ts).
      checkFence();
      await setBackupStatus(db, backupId, 'failed', clock.now(), 0);
      await backups.archive.remove(service.id, backupId).catch(() => undefined);
      await tc.driver.dropCheckpoint(service.id, backupId).catch(() => undefined);
    }
    throw err;
  }
  return {};
};

/** The backup's manifest: stored by an earlier attempt, or exported and written now. */
async function take(tc: TaskContext<'backup_create'>, backup: Backup): Promise<BackupManifest> {
  const { service, db, driver, backups } = tc;
  const done = await backups.archive.manifest(service.id, backup.id);
  if (done) return done;
  const since =
    (await listBackups(db, service.id)).find(
      (b) => b.id !== backup.id && b.format === 'archive' && b.status === 'available',
    )?.id ?? null;
  const exported = await driver.exportDisk(service.id, backup.id, since);
  try {
    const manifest = await backups.archive.write(
      {
        backupId: backup.id,
        serviceId: service.id,
        parentId: exported.kind === 'incremental' ? exported.since : null,
        kind: exported.kind,
        diskBytes: exported.diskBytes,
        createdAt: backup.createdAt,
      },
      exported.runs,
    );
    await exported.commit();
    return manifest;
  } finally {
    await exported.close();
  }
}

/**
 * Makes room for the new backup within the service's quota, oldest scheduled backup first. A
 * rotated backup with a child is merged into it first, which may grow the child (the new backup
 * too: sizes are read again after each merge). A merge loses nothing (both stay restorable), so
 * every merge is made before any backup is removed: if the merged sizes still do not fit, the job
 * fails with every old backup in place. Then the backup is `available`, and the rotated ones are
 * removed, each only once takeForRemoval holds it: one that a queued or running restore or
 * deletion names is kept (over the quota until the next rotation removes it).
 */
async function rotate(tc: TaskContext<'backup_create'>, backup: Backup, manifest: BackupManifest) {
  const { service, db, clock, driver, backups } = tc;
  await settleLeftOver(tc);
  const tooBig = (gb: number) =>
    new DriverError(
      `Backup quota exceeded: the backup takes ${gb} GB and the service's ${service.backup} GB cannot hold it`,
      { transient: false },
    );
  // Its place in the chain first: a rotated parent finds it as its child.
  await setBackupChain(db, backup.id, storedOf(manifest), clock.now());
  const needGb = storedOf(manifest).sizeGb;
  const others = (await listBackups(db, service.id)).filter((b) => b.id !== backup.id);
  // Not even rotating every scheduled backup out makes room: nothing is rotated.
  if (!planRotation(others, service.backup, needGb)) throw tooBig(needGb);
  const victims: Backup[] = [];
  // Backups that cannot be rotated out: the chain after them is broken in the store (a later
  // backup's manifest, or their own, is missing). They stay; the next oldest is rotated instead.
  const kept = new Set<string>();
  for (;;) {
    const live = (await listBackups(db, service.id)).filter(
      (b) => b.status !== 'failed' && !victims.some((v) => v.id === b.id),
    );
    const own = live.find((b) => b.id === backup.id)?.sizeGb ?? needGb;
    if (sumGb(live.map((b) => b.sizeGb)) <= service.backup) break;
    const victim = live
      .filter(
        (b) => b.id !== backup.id && b.kind === 'scheduled' && b.status === 'available' && !kept.has(b.id),
      )
      .sort((a, b) => a.createdAt - b.createdAt)[0];
    if (!victim) throw tooBig(own);
    try {
      await mergeIntoChild(db, backups.archive, victim, clock.now());
    } catch (err) {
      if (!(err instanceof DriverError) || err.transient) throw err;
      kept.add(victim.id);
      tc.log.warn(
        { serviceId: service.id, backupId: victim.id, error: err.message },
        'backup rotation: a backup whose chain is broken in the store is kept; the next oldest is rotated out',
      );
      continue;
    }
    victims.push(victim);
  }
  // The new backup is kept from here on: a rotated backup that was its parent lives on in it
  // (merged), so discarding it now would lose that one too. A removal that fails leaves only a
  // backup too many (its child stands without it), which the next rotation removes; one whose
  // objects had left the store already is `failed` (0 GB), nothing of it to restore.
  await setBackupStatus(db, backup.id, 'available', clock.now());
  for (const victim of victims) {
    try {
      if (!(await takeForRemoval(tc, victim))) continue;
      await removeBackup(db, { archive: backups.archive, driver }, victim, clock.now());
    } catch (err) {
      // A run whose lease ran out stops here: its job's next run rotates again.
      if (err instanceof FenceDown) throw err;
      // Whatever this settling meets, the new backup stays: it holds what a rotated parent had.
      await settleUnremoved(db, backups.archive, victim, clock.now()).catch(() => undefined);
      tc.log.warn(
        {
          serviceId: service.id,
          backupId: victim.id,
          error: messageOf(err),
        },
        'backup rotation: a rotated-out backup could not be removed now; the next rotation removes it',
      );
    }
  }
}

/**
 * Holds a rotated-out backup for its removal, or leaves it in place (false). The rule, so that a
 * restore's acceptance and this rotation always see each other: the backup is marked `deleting`
 * first, only if it is still `available`, and only then are the service's queued and running
 * jobs read. A restore (or deletion) accepted before the mark is among them: the backup is
 * `available` again and kept, for a later rotation (after the restore) to remove. A restore asked
 * for after it is refused (400 invalid_state: the backup is `deleting`). One being accepted while
 * the mark is made holds the backup's row (backup-operation.ts locks it in the transaction that
 * records the job): the mark waits for that commit, and the read after it sees the job. (A
 * deletion accepted in that instant may name a backup this removes: its job finds it gone.)
 */
async function takeForRemoval(tc: TaskContext<'backup_create'>, victim: Backup): Promise<boolean> {
  const { service, db, clock } = tc;
  const markedAt = clock.now();
  // Not `available` now: a deletion accepted since removes it itself.
  if (!(await markBackupDeleting(db, victim.id, markedAt))) return false;
  const named = (await backupsNamedByPendingJobs(db, service.id)).filter((j) => j.backupId === victim.id);
  if (named.length === 0) return true;
  await setBackupStatus(db, victim.id, 'available', clock.now(), undefined, {
    status: 'deleting',
    updatedAt: markedAt,
  });
  tc.log.info(
    { serviceId: service.id, backupId: victim.id, jobs: named.map((j) => j.action) },
    'backup rotation: a rotated-out backup that a queued job names is kept; a later rotation removes it',
  );
  return false;
}

/**
 * Settles what an earlier rotation marked `deleting` and did not remove (its process died
 * between takeForRemoval and the end of the removal): a `deleting` backup that no queued or
 * running deletion names (a deletion's acceptance marks its backup with its job, and refuses a
 * backup that is `deleting`) is `available` again, or `failed` if its objects left the store
 * already (settleUnremoved), and may be rotated out anew.
 */
async function settleLeftOver(tc: TaskContext<'backup_create'>): Promise<void> {
  const { service, db, clock, backups } = tc;
  const deleting = (await listBackups(db, service.id)).filter((b) => b.status === 'deleting');
  if (deleting.length === 0) return;
  const named = await backupsNamedByPendingJobs(db, service.id);
  for (const b of deleting) {
    if (named.some((j) => j.action === 'backup_delete' && j.backupId === b.id)) continue;
    await settleUnremoved(db, backups.archive, b, clock.now());
  }
}
