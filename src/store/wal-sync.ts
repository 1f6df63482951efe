/**
 * Durable commits on SQLite without blocking the event loop. The store runs with `synchronous =
 * normal`, under which SQLite's COMMIT writes the transaction's pages to the WAL file but does not
 * wait for the disk: node:sqlite runs on the event loop's thread, and a sync there would stop
 * every request for its duration. This flushes the WAL file to the disk (`fdatasync`, on libuv's
 * thread pool) after the COMMIT instead, and whoever made the commit is told done only once a
 * flush that began after it has finished: the same promise as `synchronous = full`, whose COMMIT
 * syncs the WAL, with the wait off the thread. Commits that arrive while a flush runs share the
 * next one.
 *
 * Between its COMMIT and that flush a commit is already visible to readers (this process's read
 * connection, other processes); a power cut in that window loses it, but nobody was told it was
 * done, and anything written after it that was told done went to the WAL after it and was
 * flushed with it (the WAL is one file written in order). SQLite itself syncs the WAL before a
 * checkpoint copies it into the database, the database after, and the WAL's header when it
 * starts over (`synchronous = normal` in WAL mode).
 *
 * A flush that fails leaves the disk's state unknown (the kernel may have dropped the pages it
 * could not write): every commit waiting for it fails, and so does everything after, until the
 * process is restarted and SQLite recovers from what the WAL holds on disk.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Makes what was written to an open file durable (the default: `fdatasync`). */
export type SyncFile = (file: FileHandle) => Promise<void>;

const datasync: SyncFile = (file) => file.datasync();
const ignore = () => {};

/** The code of WalNotDurable (errors.ts counts it as the store being unavailable: a 503). */
export const WAL_NOT_DURABLE = 'ERR_WAL_NOT_DURABLE';

/** Why the store refuses to go on: its WAL could not be made durable. */
export class WalNotDurable extends Error {
  readonly code = WAL_NOT_DURABLE;
  constructor(cause: unknown) {
    super('the SQLite store could not flush its WAL to disk; restart the process', { cause });
    this.name = 'WalNotDurable';
  }
}

export class WalSync {
  readonly #path: string;
  readonly #sync: SyncFile;
  #file: Promise<FileHandle> | undefined;
  /** The flush running now, and the one after it that later commits share. */
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #failed: WalNotDurable | undefined;

  /** `walPath`: the WAL file of a database in WAL mode (its name with `-wal`). */
  constructor(walPath: string, sync: SyncFile = datasync) {
    this.#path = walPath;
    this.#sync = sync;
  }

  /** Set once a flush has failed: the store must not be written again by this process. */
  get failed(): WalNotDurable | undefined {
    return this.#failed;
  }

  /** Resolves once everything written to the WAL before this call is on the disk. */
  afterWrites(): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    if (this.#queued) return this.#queued;
    if (!this.#running) return this.#start();
    // The running flush may have begun before these writes: the next one covers them.
    const queued = this.#running.then(ignore, ignore).then(() => {
      this.#queued = undefined;
      return this.#failed ? Promise.reject(this.#failed) : this.#start();
    });
    this.#queued = queued;
    return queued;
  }

  /** Waits for the flushes under way, then closes the file. */
  async close(): Promise<void> {
    await this.#queued?.catch(ignore);
    await this.#running?.catch(ignore);
    const file = this.#file;
    this.#file = undefined;
    await (await file?.catch(() => undefined))?.close();
  }

  #start(): Promise<void> {
    const run: Promise<void> = this.#flush().finally(() => {
      if (this.#running === run) this.#running = undefined;
    });
    this.#running = run;
    return run;
  }

  async #flush(): Promise<void> {
    try {
      this.#file ??= this.#open();
      await this.#sync(await this.#file);
    } catch (err) {
      this.#failed ??= new WalNotDurable(err);
      throw this.#failed;
    }
  }

  /** Opens the WAL once, and makes its name in the directory durable (SQLite created it). */
  async #open(): Promise<FileHandle> {
    const file = await open(this.#path, 'r');
    const dir = await open(dirname(this.#path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    return file;
  }
}
