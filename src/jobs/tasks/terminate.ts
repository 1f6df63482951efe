import { deleteBackupRow, keepBackupsUntil, listBackups } from '../../store/repos/backups.ts';
import type { Task } from '../task.ts';

/**
 * Releases everything: backups first (their storage), then the VM, its disks and its addresses.
 * With VRP_BACKUP_KEEP_AFTER_TERMINATE, the backups in the backup store are kept that long (the
 * pruner removes them after); those on the host (legacy) go with the VM.
 */
export const terminate: Task<'terminate'> = async ({ service, driver, db, clock, backups }) => {
  const now = clock.now();
  const keep = backups.keepAfterTerminateMs > 0;
  // Newest first: a chain goes child first, so nothing needs merging.
  for (const backup of await listBackups(db, service.id)) {
    if (backup.format === 'legacy') await driver.deleteLegacyBackup(service.id, backup.id);
    else if (keep) continue;
    else await backups.archive.remove(service.id, backup.id);
    await deleteBackupRow(db, backup.id);
  }
  if (keep) await keepBackupsUntil(db, service.id, now + backups.keepAfterTerminateMs, now);
  await driver.destroy(service.id);
  await db.deleteFrom('backup_schedules').where('service_id', '=', service.id).execute();
  return { ips: [], hostId: null, terminatedAt: now, suspendReason: null, rescueSince: null };
};
