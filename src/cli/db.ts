import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { deriveKeys, keyFilePath, loadMasterKey } from '../auth/keys.ts';
import type { Config } from '../config.ts';
import {
  type BackupFileInfo,
  backupPostgres,
  backupSqlite,
  readPostgresBackup,
  readSqliteBackup,
  restorePostgres,
  restoreSqlite,
  StoreBackupError,
} from '../store/store-backup.ts';
import { CommandError, type Output, one, positionals, UsageError } from './output.ts';

/**
 * `vrp db backup FILE` and `vrp db restore FILE` (docs/cli.md, docs/operations.md). Neither
 * migrates the store: a backup taken before an upgrade is the store as the old version left it.
 */
export async function dbCommand(config: Config, args: readonly string[], out: Output): Promise<void> {
  const [sub, ...rest] = positionals(args, 'db');
  if (sub !== 'backup' && sub !== 'restore') {
    throw new UsageError(sub ? `db: unknown command ${sub}` : 'db: a command is required');
  }
  const file = one(rest, `db ${sub}`, 'FILE');
  const sqliteFile = join(config.dataDir, 'vrp.sqlite');
  try {
    if (sub === 'backup') {
      if (config.databaseUrl) await backupPostgres(config.databaseUrl, file);
      else await backupSqlite(sqliteFile, file);
      out.result({ backup: file }, () => `backed up the store to ${file}`);
      return;
    }
    const info = config.databaseUrl ? await readPostgresBackup(file) : readSqliteBackup(file);
    checkKey(config, info);
    if (config.databaseUrl) await restorePostgres(file, config.databaseUrl);
    else await restoreSqlite(file, sqliteFile);
    out.result({ restored: file }, () => `restored the store from ${file}`);
  } catch (err) {
    if (err instanceof StoreBackupError) throw new CommandError(err.message, { error_code: err.code });
    throw err;
  }
}

/**
 * Refuses a backup whose store was used with another secret key than this installation's:
 * its tokens, stored passwords and backup keys would all be unreadable here. An installation
 * without a key yet (no VRP_SECRET_KEY, no key file) gets none made up: it must be given the
 * backed-up store's key.
 */
function checkKey(config: Config, info: BackupFileInfo): void {
  if (info.keyCheck === undefined) return;
  const keyFile = keyFilePath(config.dataDir);
  if (!config.secretKey && !existsSync(keyFile)) {
    throw new CommandError(
      `this installation has no secret key yet: set VRP_SECRET_KEY to the key of the store that was backed up, or copy its key file to ${keyFile}; nothing was changed`,
      { error_code: 'backup_key_mismatch' },
    );
  }
  if (deriveKeys(loadMasterKey(config.secretKey, config.dataDir)).check !== info.keyCheck) {
    const source = config.secretKey ? 'VRP_SECRET_KEY' : `the key in ${keyFile}`;
    throw new CommandError(
      `the backup was made with another secret key than ${source}: its tokens and encrypted secrets would be unreadable; set VRP_SECRET_KEY to the key of the store that was backed up; nothing was changed`,
      { error_code: 'backup_key_mismatch' },
    );
  }
}
