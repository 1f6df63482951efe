import { DriverError } from '../../drivers/driver.ts';
import { findBackup, setBackupStatus } from '../../store/repos/backups.ts';
import { type Task, vmChange } from '../task.ts';

/** The driver powers off if needed, restores, and returns the VM to the power state it had. */
export const backupRestore: Task<'backup_restore'> = async ({ service, driver, db, clock, job }) => {
  const backupId = job.params.backup_id;
  const backup = await findBackup(db, service.id, backupId);
  if (!backup || backup.status === 'failed') {
    throw new DriverError(`Backup ${backupId} is not available to restore`, { transient: false });
  }
  await setBackupStatus(db, backupId, 'restoring', clock.now());
  try {
    await driver.restoreBackup(service.id, backupId);
  } finally {
    await setBackupStatus(db, backupId, 'available', clock.now());
  }
  const vm = await driver.inspect(service.id);
  return vm ? vmChange(vm) : {};
};
