import { deleteBackupRow, listBackups } from '../../store/repos/backups.ts';
import type { Task } from '../task.ts';

/** Releases everything: backups first (their storage), then the VM, its disks and its addresses. */
export const terminate: Task<'terminate'> = async ({ service, driver, db, clock }) => {
  for (const backup of await listBackups(db, service.id)) {
    await driver.deleteBackup(service.id, backup.id);
    await deleteBackupRow(db, backup.id);
  }
  await driver.destroy(service.id);
  await db.deleteFrom('backup_schedules').where('service_id', '=', service.id).execute();
  return { ips: [], hostId: null, terminatedAt: clock.now(), suspendReason: null };
};
