import type { BackupStoreConfig } from '../../config.ts';
import { localBackupStore } from './local.ts';
import { s3BackupStore } from './s3.ts';
import { sftpBackupStore } from './sftp.ts';
import type { BackupStore } from './store.ts';

/** The store VRP_BACKUP_STORE names. Nothing is contacted until the first call (`probe` checks it). */
export function createBackupStore(settings: BackupStoreConfig): BackupStore {
  switch (settings.kind) {
    case 'local':
      return localBackupStore(settings.path);
    case 'sftp':
      return sftpBackupStore({
        host: settings.host,
        port: settings.port,
        username: settings.username,
        path: settings.path,
        privateKey: settings.privateKey,
        hostKey: settings.hostKey,
      });
    case 's3':
      return s3BackupStore({
        bucket: settings.bucket,
        prefix: settings.prefix,
        endpoint: settings.endpoint,
        region: settings.region,
        accessKeyId: settings.accessKeyId,
        secretAccessKey: settings.secretAccessKey,
        forcePathStyle: settings.forcePathStyle,
      });
  }
}
