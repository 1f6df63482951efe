import { deleteBackupRow } from '../../store/repos/backups.ts';
import type { Task } from '../task.ts';

export const backupDelete: Task<'backup_delete'> = async ({ service, driver, db, job }) => {
  const backupId = job.params.backup_id;
  await driver.deleteBackup(service.id, backupId);
  await deleteBackupRow(db, backupId);
  return {};
};
