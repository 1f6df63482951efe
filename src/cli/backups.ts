import type { Kysely } from 'kysely';
import { deriveKeys, loadMasterKey } from '../auth/keys.ts';
import type { Config } from '../config.ts';
import { backupKeyOf, openBackupStore } from '../context.ts';
import { ApiError } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import { createArchive } from '../drivers/backup-store/archive.ts';
import { type BackupVerification, verifyBackup } from '../jobs/backup-verify.ts';
import type { Database } from '../store/schema.ts';
import { CommandError, type Output, positionals, UsageError } from './output.ts';

/** A verification as `--json` prints it: the operator API's answer. */
function verificationJson(r: BackupVerification) {
  return { backup_id: r.backupId, ok: r.ok, segments: r.segments, bad: r.bad };
}

function lines(r: BackupVerification): string {
  const head = `${r.backupId}\t${r.ok ? 'ok' : 'DAMAGED'}\t${r.segments} segments`;
  return [
    head,
    ...r.bad.map((b) =>
      b.segment < 0
        ? `  manifest: ${b.reason}`
        : `  segment ${b.segment} (disk bytes ${b.offset} to ${b.offset + b.length}): ${b.reason}`,
    ),
  ].join('\n');
}

/**
 * `vrp backup verify BACKUP_ID` (docs/cli.md): reads the backup back from the backup store and
 * checks every segment, as `POST OPS/backups/{id}/verify` does. Exit 1 when it is not intact.
 */
export async function backupCommand(
  db: Kysely<Database>,
  args: string[],
  out: Output,
  config: Config,
): Promise<void> {
  const [sub, ...rest] = positionals(args, 'backup');
  if (sub !== 'verify')
    throw new UsageError(sub ? `backup: unknown command ${sub}` : 'backup: a command is required');
  const [id, ...extra] = rest;
  if (!id) throw new UsageError('backup verify: a BACKUP_ID is required');
  if (extra.length > 0) throw new UsageError(`backup verify: unexpected arguments: ${extra.join(' ')}`);
  if (!isUuid(id)) throw new CommandError('Backup not found', { error_code: 'backup_not_found' });
  const store = await openBackupStore(config);
  try {
    const key = backupKeyOf(config, deriveKeys(loadMasterKey(config.secretKey, config.dataDir)));
    const report = await verifyBackup(db, createArchive(store, key), id.toLowerCase());
    if (report.ok) {
      out.result(verificationJson(report), () => lines(report));
      return;
    }
    if (!out.json) process.stdout.write(`${lines(report)}\n`);
    throw new CommandError(`backup ${report.backupId} is damaged`, verificationJson(report));
  } catch (err) {
    if (err instanceof ApiError) throw new CommandError(err.message, { error_code: err.code });
    throw err;
  } finally {
    await store.close();
  }
}
