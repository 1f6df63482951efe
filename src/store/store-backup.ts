/**
 * The store's own backup (`vrp db backup` / `vrp db restore`, docs/operations.md): SQLite
 * through its online backup API, PostgreSQL through pg_dump's custom format and pg_restore.
 * A backup holds the whole store, including the secret key's check value (`meta.key_check`),
 * which a restore compares with the key of the installation it restores into.
 */

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, openSync, readSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { backup, DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { ensureDataDir } from '../data-dir.ts';
import { messageOf } from '../domain/errors.ts';
import { ExpectedFailure } from '../expected-failure.ts';

/** Why a backup or restore was refused or failed; `code` is its stable error_code. */
export class StoreBackupError extends ExpectedFailure {
  override name = 'StoreBackupError';
  readonly code: string;
  constructor(code: string, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.code = code;
  }
}

/** What a backup file says of itself before it is restored. */
export interface BackupFileInfo {
  /** The secret key's check value the backed-up store kept; undefined if it never recorded one. */
  readonly keyCheck: string | undefined;
}

const SQLITE_MAGIC = 'SQLite format 3\0';
const PG_MAGIC = 'PGDMP';

function header(file: string, length: number): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw new StoreBackupError(
      'backup_unreadable',
      `cannot read the backup file ${file}: ${messageOf(err)}`,
      {
        cause: err,
      },
    );
  }
  try {
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, 0);
    return buf.subarray(0, n).toString('latin1');
  } finally {
    closeSync(fd);
  }
}

/**
 * A file name beside `file` that a crashed run leaves as litter, never as a half-written `file`;
 * this run's own (its process id and random bytes: two runs to one destination from containers
 * whose processes are both PID 1 never write one file).
 */
function partialOf(file: string): string {
  return join(dirname(file), `.${basename(file)}.partial-${process.pid}-${randomBytes(4).toString('hex')}`);
}

// ---- SQLite -------------------------------------------------------------------------------

/**
 * Copies the SQLite store `source` to `dest` with the online backup API, in one step: the copy
 * is one read transaction, so it is the store as of one commit while servers keep writing
 * (WAL: the readers do not block them). The copy is a single self-contained file, mode 0600
 * (password hashes and encrypted secrets are in it).
 */
export async function backupSqlite(source: string, dest: string): Promise<void> {
  if (!existsSync(source)) {
    throw new StoreBackupError('store_not_found', `there is no store to back up: ${source} does not exist`);
  }
  const partial = partialOf(dest);
  const db = new DatabaseSync(source, { readOnly: true, timeout: 10_000 });
  try {
    // The largest step there is: every page in one step, under one read transaction.
    await backup(db, partial, { rate: 2 ** 31 - 1 });
    const copy = new DatabaseSync(partial);
    try {
      copy.exec('pragma journal_mode = delete');
    } finally {
      copy.close();
    }
    chmodSync(partial, 0o600);
    renameSync(partial, dest);
  } catch (err) {
    rmSync(partial, { force: true });
    throw new StoreBackupError('backup_failed', `the backup to ${dest} failed: ${messageOf(err)}`, {
      cause: err,
    });
  } finally {
    db.close();
  }
}

/** Opens a SQLite backup read-only and checks it; refuses anything that is not an intact one. */
export function readSqliteBackup(file: string): BackupFileInfo {
  if (header(file, SQLITE_MAGIC.length) !== SQLITE_MAGIC) {
    throw new StoreBackupError(
      'backup_unreadable',
      `${file} is not a backup of a SQLite store (made by vrp db backup with the SQLite store)`,
    );
  }
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(file, { readOnly: true });
    const check = db.prepare('pragma quick_check').all();
    const verdict = check.map((r) => String(Object.values(r)[0])).join('; ');
    if (verdict !== 'ok') throw new Error(verdict);
    const hasMeta = db.prepare(`select 1 from sqlite_master where type = 'table' and name = 'meta'`).get();
    const row = hasMeta ? db.prepare(`select value from meta where key = 'key_check'`).get() : undefined;
    return { keyCheck: row === undefined ? undefined : String(row['value']) };
  } catch (err) {
    if (err instanceof StoreBackupError) throw err;
    throw new StoreBackupError('backup_unreadable', `the backup file ${file} is damaged: ${messageOf(err)}`, {
      cause: err,
    });
  } finally {
    db?.close();
  }
}

function sqliteTables(file: string): number {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const row = db.prepare(`select count(*) as n from sqlite_master where type = 'table'`).get();
    return Number(row?.['n'] ?? 0);
  } finally {
    db.close();
  }
}

/**
 * Restores the SQLite backup `file` as the store `target`, which must not exist or be empty
 * (no table). The copy goes to a file beside it and is renamed into place when complete.
 */
export async function restoreSqlite(file: string, target: string): Promise<void> {
  if (existsSync(target) && sqliteTables(target) > 0) {
    throw new StoreBackupError(
      'restore_target_not_empty',
      `the store ${target} is not empty: restore only into a new data directory (or remove that store first); nothing was changed`,
    );
  }
  ensureDataDir(dirname(target));
  const partial = partialOf(target);
  const source = new DatabaseSync(file, { readOnly: true });
  try {
    await backup(source, partial, { rate: 2 ** 31 - 1 });
    // An empty store's log must not be replayed over the restored file.
    for (const suffix of ['-wal', '-shm']) rmSync(`${target}${suffix}`, { force: true });
    renameSync(partial, target);
  } catch (err) {
    rmSync(partial, { force: true });
    throw new StoreBackupError('restore_failed', `the restore of ${file} failed: ${messageOf(err)}`, {
      cause: err,
    });
  } finally {
    source.close();
  }
}

// ---- PostgreSQL ---------------------------------------------------------------------------

/**
 * How libpq's tools reach `databaseUrl`: the URL without its password on the command line
 * (where `ps` shows it), the password in PGPASSWORD.
 */
function libpqTarget(databaseUrl: string): { dbname: string; env: NodeJS.ProcessEnv } {
  const url = new URL(databaseUrl);
  const password = decodeURIComponent(url.password);
  url.password = '';
  return { dbname: url.toString(), env: password ? { PGPASSWORD: password } : {} };
}

async function runTool(
  tool: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.once('error', (err) => {
      const missing = 'code' in err && err.code === 'ENOENT';
      reject(
        new StoreBackupError(
          'tool_missing',
          missing
            ? `${tool} is not installed (Debian: apt-get install postgresql-client, of the server's major version or newer)`
            : `${tool} could not run: ${err.message}`,
          { cause: err },
        ),
      );
    });
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function firstLines(text: string): string {
  return text.trim().split('\n').slice(0, 3).join(' ');
}

/** `pg_dump --format=custom` of the store at `databaseUrl` into `dest` (one snapshot: consistent). */
export async function backupPostgres(databaseUrl: string, dest: string): Promise<void> {
  const { dbname, env } = libpqTarget(databaseUrl);
  const partial = partialOf(dest);
  const r = await runTool('pg_dump', ['--format=custom', `--file=${partial}`, `--dbname=${dbname}`], env);
  if (r.code !== 0) {
    rmSync(partial, { force: true });
    throw new StoreBackupError('backup_failed', `pg_dump failed: ${firstLines(r.stderr)}`);
  }
  chmodSync(partial, 0o600);
  renameSync(partial, dest);
}

/** Reads a pg_dump archive's `meta` rows (without a database); refuses anything else. */
export async function readPostgresBackup(file: string): Promise<BackupFileInfo> {
  if (header(file, PG_MAGIC.length) !== PG_MAGIC) {
    throw new StoreBackupError(
      'backup_unreadable',
      `${file} is not a backup of a PostgreSQL store (made by vrp db backup with the PostgreSQL store)`,
    );
  }
  const r = await runTool('pg_restore', ['--data-only', '--table=meta', '--file=-', file], {});
  if (r.code !== 0) {
    throw new StoreBackupError(
      'backup_unreadable',
      `the backup file ${file} is damaged: ${firstLines(r.stderr)}`,
    );
  }
  // The rows come as COPY text: `key<TAB>value` lines up to `\.`.
  const lines = r.stdout.split('\n');
  const start = lines.findIndex((l) => /^COPY \S*meta \(key, value\) FROM stdin;$/.test(l));
  let keyCheck: string | undefined;
  for (let i = start + 1; start >= 0 && i < lines.length && lines[i] !== '\\.'; i++) {
    const [key, value] = (lines[i] ?? '').split('\t');
    if (key === 'key_check') keyCheck = value;
  }
  return { keyCheck };
}

/** `pg_restore` of `file` into the database at `databaseUrl`, which must be empty; all or nothing. */
export async function restorePostgres(file: string, databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const r = await client.query<{ n: number }>(
      `select count(*)::int as n from pg_class c join pg_namespace s on s.oid = c.relnamespace
        where s.nspname not in ('pg_catalog', 'information_schema') and s.nspname not like 'pg_toast%'
          and s.nspname not like 'pg_temp%'`,
    );
    if ((r.rows[0]?.n ?? 0) > 0) {
      throw new StoreBackupError(
        'restore_target_not_empty',
        'the database VRP_DATABASE_URL names is not empty: restore only into a new, empty database; nothing was changed',
      );
    }
  } finally {
    await client.end();
  }
  const { dbname, env } = libpqTarget(databaseUrl);
  const r = await runTool(
    'pg_restore',
    ['--no-owner', '--no-privileges', '--single-transaction', '--exit-on-error', `--dbname=${dbname}`, file],
    env,
  );
  if (r.code !== 0) {
    throw new StoreBackupError(
      'restore_failed',
      `pg_restore failed (nothing was restored): ${firstLines(r.stderr)}`,
    );
  }
}
