import type { Kysely } from 'kysely';
import { ApiError } from '../domain/errors.ts';
import {
  type BackupArchive,
  BackupCorruptError,
  BackupDecryptError,
  type VerifyReport,
} from '../drivers/backup-store/archive.ts';
import { BackupStoreError } from '../drivers/backup-store/store.ts';
import { findBackupById } from '../store/repos/backups.ts';
import type { Database } from '../store/schema.ts';

/** A verification's answer (the operator API's and `vrp backup verify --json`'s). */
export interface BackupVerification extends VerifyReport {
  readonly backupId: string;
}

/**
 * Reads backup `backupId` back from the backup store and checks every segment (checksum, seal,
 * length): the one home of the operator API's verify and the CLI's. A manifest that cannot be
 * read (missing, damaged, sealed with another key) is a failed verification whose one bad entry
 * is segment -1. 404 `backup_not_found`; a backup that is not in the store (a legacy one, kept on
 * its host; one being taken or that failed) 400 `invalid_state`; a store that does not answer
 * 503 `store_unavailable`.
 */
export async function verifyBackup(
  db: Kysely<Database>,
  archive: BackupArchive,
  backupId: string,
): Promise<BackupVerification> {
  const backup = await findBackupById(db, backupId);
  if (!backup) throw new ApiError('backup_not_found', 'Backup not found');
  if (backup.format === 'legacy')
    throw new ApiError(
      'invalid_state',
      'This backup is kept on its host, not in the backup store: it cannot be verified',
    );
  if (backup.status === 'creating' || backup.status === 'failed')
    throw new ApiError('invalid_state', `Cannot verify a backup that is ${backup.status}`);
  try {
    return { backupId, ...(await archive.verify(backup.serviceId, backupId)) };
  } catch (err) {
    if (err instanceof BackupCorruptError || err instanceof BackupDecryptError)
      return {
        backupId,
        ok: false,
        segments: 0,
        bad: [{ segment: -1, offset: 0, length: 0, reason: err.message }],
      };
    if (err instanceof BackupStoreError && !err.missing)
      throw new ApiError('store_unavailable', `The backup store cannot be read: ${err.message}`, {
        cause: err,
      });
    throw err;
  }
}
