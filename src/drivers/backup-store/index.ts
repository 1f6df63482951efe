import type { BackupStoreConfig } from '../../config.ts';
import { localBackupStore } from './local.ts';
import type { BackupStore } from './store.ts';

/**
 * The store VRP_BACKUP_STORE names. Nothing is contacted until the first call (`probe` checks it).
 * The SFTP and S3 stores' modules, and the SSH and AWS libraries under them, are loaded only
 * when one of them is the store: a process that keeps its backups locally does not hold them in
 * memory (bench/FINDINGS.md, "Memory at rest").
 */
export async function createBackupStore(settings: BackupStoreConfig): Promise<BackupStore> {
  switch (settings.kind) {
    case 'local':
      return localBackupStore(settings.path);
    case 'sftp': {
      const { sftpBackupStore } = await import('./sftp.ts');
      return sftpBackupStore({
        host: settings.host,
        port: settings.port,
        username: settings.username,
        path: settings.path,
        privateKey: settings.privateKey,
        hostKey: settings.hostKey,
      });
    }
    case 's3': {
      const { s3BackupStore } = await import('./s3.ts');
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
}
