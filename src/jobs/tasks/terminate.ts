import { deleteBackupRow, keepBackupsUntil, listBackups } from '../../store/repos/backups.ts';
import { beforeRelease, removeServicePtrs } from '../reverse-dns.ts';
import type { Task } from '../task.ts';

/**
 * Releases everything: backups first (their storage), then the service's PTR records (while its
 * addresses still name them), then the VM, its disks and its addresses. With
 * VRP_BACKUP_KEEP_AFTER_TERMINATE, the backups in the backup store are kept that long (the
 * pruner removes them after); those on the host (legacy) go with the VM. A DNS server that fails
 * is a transient error: the job is retried, and the addresses are not handed to another service
 * while their PTR records still point at this one's names.
 */
export const terminate: Task<'terminate'> = async ({
  service,
  driver,
  db,
  clock,
  backups,
  reverseDns,
  signal,
}) => {
  const now = clock.now();
  const keep = backups.keepAfterTerminateMs > 0;
  // Newest first: a chain goes child first, so nothing needs merging.
  for (const backup of await listBackups(db, service.id)) {
    if (backup.format === 'legacy') await driver.deleteLegacyBackup(service.id, backup.id);
    else if (keep) continue;
    else await backups.archive.remove(service.id, backup.id);
    await deleteBackupRow(db, backup.id);
  }
  await beforeRelease(() => removeServicePtrs({ db, reverseDns, clock }, service.id, signal));
  await driver.destroy(service.id);
  // Kept only once the server is gone: a terminate that fails leaves the service as it was, its
  // backups with no end of their own.
  if (keep) await keepBackupsUntil(db, service.id, now + backups.keepAfterTerminateMs, now);
  await db.deleteFrom('backup_schedules').where('service_id', '=', service.id).execute();
  return { ips: [], hostId: null, terminatedAt: now, suspendReason: null, rescueSince: null };
};
