import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '../config.ts';
import { ensureDataDir } from '../data-dir.ts';
import { systemCause } from '../expected-failure.ts';

/** Keys derived from the one master key: each use gets its own, so none is used twice. */
export interface Keys {
  /** AES-256-GCM key for server passwords at rest. */
  readonly passwordKey: Buffer;
  /** HMAC-SHA256 key that signs access tokens. */
  readonly tokenKey: Buffer;
  /** HMAC-SHA256 key that signs the operator API's list cursors, so a list takes back only its own. */
  readonly cursorKey: Buffer;
  /** AES-256-GCM key of backups in the backup store, unless VRP_BACKUP_KEY gives one. */
  readonly backupKey: Buffer;
  /**
   * Identifies the master key without revealing it (an HMAC of a fixed label under a key of its
   * own): the store keeps the first one it saw, so a process with another key is refused.
   */
  readonly check: string;
}

/** A 32-byte key as config.ts accepts it: 64 hex digits or base64. */
export function decodeKey(raw: string): Buffer {
  return /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
}

/**
 * The master key comes from VRP_SECRET_KEY, or from `secret.key` in the data dir, created on
 * first start with mode 0600. Several processes on several machines must share one key.
 */
export function loadMasterKey(secretKey: string | undefined, dataDir: string): Buffer {
  if (secretKey) return decodeKey(secretKey);
  const file = keyFilePath(dataDir);
  let raw: string;
  try {
    if (!existsSync(file)) {
      ensureDataDir(dataDir);
      createKeyFile(file);
    }
    chmodSync(file, 0o600);
    raw = readFileSync(file, 'utf8').trim();
  } catch (err) {
    const cause = systemCause(err);
    if (cause === undefined) throw err;
    throw new ConfigError(`the key file ${file} cannot be used: ${cause} (or set VRP_SECRET_KEY)`, {
      cause: err,
    });
  }
  if (!/^[0-9a-f]{64}$/i.test(raw)) {
    throw new ConfigError(
      `the key file ${file} does not hold a 32-byte key as 64 hex digits: restore the store's key file, or set VRP_SECRET_KEY to its key`,
    );
  }
  return Buffer.from(raw, 'hex');
}

/**
 * Makes the key file whole or not at all: the key is written and flushed to a file of this
 * process's own, then linked into place, which fails if the name exists, and the directory is
 * synced. Processes starting together on a fresh data dir all keep the key linked first and never
 * read a file another is still writing (created and then written, it used to read empty for a
 * moment); and a key the store has recorded (its check, in a synced commit) outlives a power cut.
 */
function createKeyFile(file: string): void {
  const pending = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(pending, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx', flush: true });
  try {
    linkSync(pending, file);
  } catch (err) {
    // Another process linked its key first: use theirs.
    if (!(err instanceof Error && 'code' in err && err.code === 'EEXIST')) throw err;
  } finally {
    rmSync(pending, { force: true });
  }
  const dir = openSync(dirname(file), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/** The key file used when VRP_SECRET_KEY is not set. */
export function keyFilePath(dataDir: string): string {
  return join(dataDir, 'secret.key');
}

export function deriveKeys(master: Buffer): Keys {
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), info, 32));
  return Object.freeze({
    passwordKey: derive('vrp password encryption v1'),
    tokenKey: derive('vrp token signing v1'),
    cursorKey: derive('vrp cursor signing v1'),
    backupKey: derive('vrp backup encryption v1'),
    check: `v1:${createHmac('sha256', derive('vrp key check v1')).update('vrp key check').digest('hex')}`,
  });
}
