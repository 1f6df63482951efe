import { DriverError } from '../../drivers/driver.ts';
import { findBackup, setBackupStatus } from '../../store/repos/backups.ts';
import { removeBackup } from '../backup-chain.ts';
import type { Task } from '../task.ts';

/**
 * Removes the backup; the backup after it in its chain, if any, is merged first and stays
 * restorable. A deletion that fails for good (the merge cannot be made) leaves the backup as it
 * was, `available` again: the job says why, and the deletion can be asked again.
 */
export const backupDelete: Task<'backup_delete'> = async ({
  service,
  driver,
  db,
  clock,
  job,
  signal,
  backups,
}) => {
  const backup = await findBackup(db, service.id, job.params.backup_id);
  // Gone already: an earlier attempt removed it.
  if (!backup) return {};
  try {
    await removeBackup(db, { archive: backups.archive, driver }, backup, clock.now());
  } catch (err) {
    if (!signal.aborted && !(err instanceof DriverError && err.transient))
      await setBackupStatus(db, backup.id, 'available', clock.now());
    throw err;
  }
  return {};
};
