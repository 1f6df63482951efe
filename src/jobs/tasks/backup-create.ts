import { DriverError } from '../../drivers/driver.ts';
import { deleteBackupRow, findBackup, listBackups, setBackupStatus } from '../../store/repos/backups.ts';
import { planRotation } from '../backup-quota.ts';
import type { Task } from '../task.ts';

/**
 * Takes the backup, then keeps the service within its backup quota: the oldest scheduled
 * backups are rotated out; if that cannot make room, the new backup is discarded and the job fails.
 */
export const backupCreate: Task<'backup_create'> = async ({ service, driver, db, clock, job, signal }) => {
  const backupId = job.params.backup_id;
  // Only the record of a skipped slot has none, and it never runs.
  if (!backupId) throw new DriverError('This backup job names no backup', { transient: false });
  const backup = await findBackup(db, service.id, backupId);
  if (!backup) throw new DriverError(`Backup ${backupId} no longer exists`, { transient: false });
  try {
    const info = await driver.createBackup(service.id, backupId);
    const others = (await listBackups(db, service.id)).filter((b) => b.id !== backupId);
    const victims = planRotation(others, service.backup, info.sizeGb);
    if (!victims) {
      await driver.deleteBackup(service.id, backupId);
      throw new DriverError(
        `Backup quota exceeded: the backup takes ${info.sizeGb} GB and the service's ${service.backup} GB cannot hold it`,
        { transient: false },
      );
    }
    for (const id of victims) {
      await driver.deleteBackup(service.id, id);
      await deleteBackupRow(db, id);
    }
    await setBackupStatus(db, backupId, 'available', clock.now(), info.sizeGb);
  } catch (err) {
    // A transient error or a shutdown: the job runs again and takes the backup then.
    if (!signal.aborted && !(err instanceof DriverError && err.transient))
      await setBackupStatus(db, backupId, 'failed', clock.now());
    throw err;
  }
  return {};
};
