import { DISK_RESTORED, DriverError } from '../../drivers/driver.ts';
import { findBackup, setBackupStatus } from '../../store/repos/backups.ts';
import { chainOf } from '../backup-chain.ts';
import { runningAsBefore, type Task, vmChange } from '../task.ts';

/**
 * Puts the backup's disk back onto the service's VM, on whatever host it is now: the chain is
 * read from the backup store (the full backup first), and the driver changes nothing until it
 * has every byte; it returns the VM to the power state it had (a server that was running when
 * the job began runs at its end, also after an attempt that powered it off and failed). A legacy
 * backup (taken on the host before the backup store) is restored by the driver as before.
 *
 * The backup shows `restoring` while it runs, and `available` again after, only from those: one
 * whose deletion was accepted after this restore (it shows `deleting`, the deletion queued
 * behind) is restored all the same, as asked first, and goes on showing `deleting`, as does one
 * whose deletion is accepted while it runs.
 *
 * The driver records the job's step marker once the disk is the backup's: a re-run after that
 * (the worker died, the host stopped answering, the store could not take the job's end) leaves
 * the disk, and what the server wrote on it since, as it is, and only powers the server as it was.
 */
export const backupRestore: Task<'backup_restore'> = async (tc) => {
  const { service, driver, db, clock, job, stepMarker } = tc;
  const backupId = job.params.backup_id;
  const backup = await findBackup(db, service.id, backupId);
  if (!backup || backup.status === 'failed') {
    throw new DriverError(`Backup ${backupId} is not available to restore`, { transient: false });
  }
  await setBackupStatus(db, backupId, 'restoring', clock.now(), undefined, { status: 'available' });
  try {
    // Not again where an earlier attempt restored the disk (the driver recorded it before it
    // started the server again): the server is only powered as it was, below.
    if (stepMarker.recorded !== DISK_RESTORED) await restoreDisk(tc, backup.format);
  } finally {
    await setBackupStatus(db, backupId, 'available', clock.now(), undefined, { status: 'restoring' });
  }
  const vm = await driver.inspect(service.id);
  return vm ? vmChange(await runningAsBefore(tc, vm)) : {};
};

/** The backup's disk put back on the service's VM by the driver (which records the job's step marker once it is). */
async function restoreDisk(tc: Parameters<Task<'backup_restore'>>[0], format: string): Promise<void> {
  const { service, driver, job, backups, stepMarker } = tc;
  const backupId = job.params.backup_id;
  if (format === 'legacy') return driver.restoreLegacyBackup(service.id, backupId, stepMarker);
  // Every manifest first: a wrong key or a missing link fails here, before the disk is touched.
  const chain = await chainOf(backups.archive, service.id, backupId);
  const target = chain[chain.length - 1];
  if (!target) throw new DriverError(`Backup ${backupId} has no chain`, { transient: false });
  await driver.importDisk(
    service.id,
    target.diskBytes,
    backups.archive.restoreRuns(chain),
    backups.archive.restoreDataBytes(chain),
    stepMarker,
  );
}
