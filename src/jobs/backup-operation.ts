import { randomUUID } from 'node:crypto';
import { ApiError } from '../domain/errors.ts';
import { findBackup, insertPendingBackup, lockBackup, setBackupStatus } from '../store/repos/backups.ts';
import type { BackupKind } from '../store/schema.ts';
import { checkBackupQuota } from './backup-quota.ts';
import type { Operation } from './queue.ts';

/** The slot of a backup schedule a scheduled backup is taken for. */
export interface ScheduleSlotRef {
  readonly scheduleId: string;
  readonly slotAt: number;
}

/**
 * Taking a backup, as one operation for the route (manual) and the scheduler (scheduled): a new
 * backup id, the quota check, and the backup's `creating` record written with the job.
 */
export function backupCreateOperation(
  kind: BackupKind,
  slot?: ScheduleSlotRef,
): Extract<Operation, { action: 'backup_create' }> {
  const backupId = randomUUID();
  return {
    action: 'backup_create',
    params: {
      backup_id: backupId,
      kind,
      ...(slot && { schedule_id: slot.scheduleId, slot_at: slot.slotAt }),
    },
    check: (service, tx) => checkBackupQuota(tx, service),
    apply: async (tx, job, service) => {
      await insertPendingBackup(tx, {
        id: backupId,
        serviceId: service.id,
        resellerId: service.resellerId,
        kind,
        hostId: service.hostId,
        now: job.createdAt,
      });
    },
  };
}

/**
 * Restoring backup `backupId` of the service: it must exist and be neither failed nor being
 * deleted (by a deletion, or by rotation: a rotated-out backup is `deleting` while it is
 * removed). Checked after the service's row is written and with the backup's row locked
 * (lockBackup), in the transaction that records the job: a rotation that marks the backup
 * `deleting` either did so before (and the restore is refused) or waits for this commit, and then
 * finds the job among those it must leave in place (jobs/tasks/backup-create.ts). The service's
 * row first, as a job's end takes them.
 */
export function backupRestoreOperation(backupId: string): Extract<Operation, { action: 'backup_restore' }> {
  return {
    action: 'backup_restore',
    params: { backup_id: backupId },
    apply: async (tx, _job, service) => {
      const backup = await lockBackup(tx, service.id, backupId);
      if (!backup) throw new ApiError('backup_not_found', 'Backup not found');
      if (backup.status === 'failed' || backup.status === 'deleting') {
        throw new ApiError('invalid_state', `Cannot restore a backup that is ${backup.status}`);
      }
    },
  };
}

/** Deleting backup `backupId` of the service: it shows `deleting` from the moment the job is accepted. */
export function backupDeleteOperation(
  backupId: string,
  now: number,
): Extract<Operation, { action: 'backup_delete' }> {
  return {
    action: 'backup_delete',
    params: { backup_id: backupId },
    check: async (service, tx) => {
      const backup = await findBackup(tx, service.id, backupId);
      if (!backup) throw new ApiError('backup_not_found', 'Backup not found');
      if (backup.status === 'deleting')
        throw new ApiError('invalid_state', 'The backup is already being deleted');
    },
    apply: (tx) => setBackupStatus(tx, backupId, 'deleting', now),
  };
}
