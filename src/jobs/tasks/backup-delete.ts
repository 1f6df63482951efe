import { DriverError } from '../../drivers/driver.ts';
import { checkFence } from '../../drivers/fence.ts';
import { findBackup } from '../../store/repos/backups.ts';
import { removeBackup, settleUnremoved } from '../backup-chain.ts';
import type { Task } from '../task.ts';

/**
 * Removes the backup; the backup after it in its chain, if any, is merged first and stays
 * restorable. A deletion that fails for good, or on its last attempt, leaves the backup as it
 * was, `available` again (the job says why, and the deletion can be asked again); if its
 * objects had left the backup store already, it is `failed` (0 GB), and a new deletion removes
 * its record.
 */
export const backupDelete: Task<'backup_delete'> = async ({
  service,
  driver,
  db,
  clock,
  job,
  maxAttempts,
  signal,
  backups,
}) => {
  const backup = await findBackup(db, service.id, job.params.backup_id);
  // Gone already: an earlier attempt removed it.
  if (!backup) return {};
  try {
    await removeBackup(db, { archive: backups.archive, driver }, backup, clock.now());
  } catch (err) {
    const last = job.attempts >= maxAttempts;
    if (!signal.aborted && (!(err instanceof DriverError && err.transient) || last)) {
      // Not by a run whose lease ran out: the job may be another run's now (fence.ts).
      checkFence();
      await settleUnremoved(db, backups.archive, backup, clock.now());
    }
    throw err;
  }
  return {};
};
