import { randomUUID } from 'node:crypto';
import { insertPendingBackup } from '../store/repos/backups.ts';
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
        now: job.createdAt,
      });
    },
  };
}
