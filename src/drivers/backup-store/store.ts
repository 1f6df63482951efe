import type { Readable } from 'node:stream';
import { DriverError } from '../driver.ts';

/**
 * Where backups are kept (VRP_BACKUP_STORE): a directory of this machine, an SFTP server or an
 * S3-compatible bucket. Objects are named by keys such as `<service id>/<backup id>/data`; what
 * is stored is already compressed and encrypted (archive.ts), so a store sees only ciphertext.
 */
export interface BackupStore {
  /** The store as the operator wrote it, without secrets: for messages and logs. */
  readonly description: string;
  /**
   * Writes the object `key` from `data`, streamed (never held whole in memory). The object
   * appears under `key` only once complete: a put that fails leaves nothing there (nor any
   * earlier object of that key replaced by a part). Resolves to the number of bytes stored.
   */
  put(key: string, data: Readable | AsyncIterable<Buffer>): Promise<number>;
  /**
   * Streams the object `key` (bytes `start` to `end` inclusive when given). Rejects with a
   * permanent BackupStoreError (`missing`) when there is no such object.
   */
  get(key: string, range?: { readonly start: number; readonly end: number }): Promise<Readable>;
  /** The object's size in bytes, or undefined when there is none. */
  size(key: string): Promise<number | undefined>;
  /**
   * The keys that start with `prefix` (e.g. `<service id>/`), in no particular order. With
   * `parts`, also the part files a put left when its process was killed midway
   * (`<key>.part-<random>`, in a store that writes an object beside its key first; an S3 store has
   * none): they are no objects, but `delete` removes them like one.
   */
  list(prefix: string, options?: { readonly parts?: boolean }): Promise<string[]>;
  /** Removes the object (or a part file `list` named); one that does not exist is already removed. */
  delete(key: string): Promise<void>;
  /** Checks that the store answers and takes writes; rejects with a BackupStoreError saying why. */
  probe(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A store that failed. Unreachable, refused or timed out: transient (the job retries, then fails
 * with this message). An object that is not there: permanent, `missing`.
 */
export class BackupStoreError extends DriverError {
  override name = 'BackupStoreError';
  readonly missing: boolean;
  constructor(message: string, options: { transient: boolean; missing?: boolean; cause?: unknown }) {
    super(message, { transient: options.transient, cause: options.cause });
    this.missing = options.missing ?? false;
  }
}

/**
 * A store's failure as one line naming the store (`Backup store <description>: <what>: <detail>`):
 * permanent (`missing`) when there is no such object, transient (the job retries) otherwise.
 */
export function storeFailure(
  description: string,
  what: string,
  detail: string,
  missing: boolean,
  cause: unknown,
): BackupStoreError {
  return new BackupStoreError(`Backup store ${description}: ${what}: ${detail}`, {
    transient: !missing,
    missing,
    cause,
  });
}

/** Keys are made by the product (ids and fixed names): anything else is a bug, not input. */
export function checkKey(key: string): string {
  if (
    !/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(key) ||
    key.split('/').some((p) => p === '..' || p === '.')
  )
    throw new Error(`not a backup store key: ${key}`);
  return key;
}
