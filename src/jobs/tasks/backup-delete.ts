import { findBackup } from '../../store/repos/backups.ts';
import { removeBackup } from '../backup-chain.ts';
import type { Task } from '../task.ts';

/** Removes the backup; the backup after it in its chain, if any, is merged first and stays restorable. */
export const backupDelete: Task<'backup_delete'> = async ({ service, driver, db, clock, job, backups }) => {
  const backup = await findBackup(db, service.id, job.params.backup_id);
  // Gone already: an earlier attempt removed it.
  if (backup) await removeBackup(db, { archive: backups.archive, driver }, backup, clock.now());
  return {};
};
