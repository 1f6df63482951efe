import { createHash } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import {
  access,
  lstat,
  mkdtemp,
  open,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  statfs,
  writeFile,
} from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { messageOf } from '../../domain/errors.ts';
import { DriverError } from '../driver.ts';
import { checkFence, fenceSignal, unfenced } from '../fence.ts';
import {
  type Commands,
  type CopyLimit,
  type CopyPace,
  copyTimeMs,
  DEFAULT_COPY_PACE,
  stderrOf,
} from './commands.ts';
import { isLocalSystem } from './local-system.ts';

/** The storage pool the driver keeps every VM file in, on each host: a `dir` pool of that name. */
export const POOL = 'vrp';

/**
 * The most bytes a volume's download moves: its virtual size (a qcow2's data is at most that
 * plus its metadata, counted in its allocation) or its allocation, whichever is larger.
 */
const bytesOf = (v: VolumeInfo | undefined) => Math.max(v?.capacity ?? 0, v?.allocation ?? 0);

/** The volume copies libvirtd makes itself (vol-create-from): virsh only waits, and libvirt tells nothing of their progress. */
const UNSEEN = async () => undefined;

/** libvirt's words for "there is no such volume". */
export function isNoVolume(err: unknown): boolean {
  return /Storage volume not found|no storage vol with matching/i.test(stderrOf(err));
}

/**
 * libvirt's words for a pool refresh refused while a volume is being built in the pool (a
 * vol-create-from's copy, a vol-create's allocation): another VM's restore or migration on the
 * same host, which can take minutes.
 */
export function isPoolBusy(err: unknown): boolean {
  return /has asynchronous jobs running/i.test(stderrOf(err));
}

/** libvirt's words for "there is no such pool" (a host the driver has not prepared yet). */
export function isNoPool(err: unknown): boolean {
  return /Storage pool not found|no storage pool with matching/i.test(stderrOf(err));
}

/** virsh's and libvirt's words for a pool defined but stopped (`pool-destroy`, a failed refresh). */
const isPoolStopped = (err: unknown) => /pool '[^']*' is not active/i.test(stderrOf(err));

/**
 * What a copy leaves free where it writes, on top of its own size: as much as the copy, up to
 * 1 GiB. A pool also holds the running VMs' disks, which grow into what is free (a full pool
 * pauses them on their next write), and this machine's temporary directory may share its disk
 * with the store.
 */
export const COPY_MARGIN_BYTES = 2 ** 30;

/**
 * The share of a pool's capacity not counted free: libvirt's "Available" for a dir pool is the
 * filesystem's free blocks, those kept for root included (5% on ext4 by default), which QEMU's
 * own user cannot write.
 */
const POOL_RESERVE = 0.05;

/** The number virsh prints after `label:` on a line of its own (`vol-info --bytes`, `pool-info --bytes`). */
const figureIn = (stdout: string, label: string): number | undefined => {
  const found = new RegExp(`^${label}:\\s+(\\d+)`, 'm').exec(stdout)?.[1];
  return found === undefined ? undefined : Number(found);
};

/**
 * A volume's size, its allocated bytes and its backing file's path (none: it has no backing
 * file), from `vol-dumpxml` (the volume's own `<capacity>` and `<allocation>` come before its
 * `<backingStore>`).
 */
export function parseVolumeXml(xml: string): { capacity: number; allocation: number; backing?: string } {
  const bytes = (element: string) =>
    Number(new RegExp(`<${element}[^>]*>(\\d+)</${element}>`).exec(xml)?.[1] ?? 0);
  const backing = /<backingStore>[\s\S]*?<path>([^<]+)<\/path>/.exec(xml)?.[1];
  return { capacity: bytes('capacity'), allocation: bytes('allocation'), ...(backing ? { backing } : {}) };
}

/** A size as people read it: `12.3 GiB`, `45.6 MiB` below 1 GiB. */
const sized = (bytes: number) =>
  bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(1)} GiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** Whether a copy of about `need` bytes fits in `free` with what is kept free beside it (as much as the copy, up to COPY_MARGIN_BYTES). */
export const roomLeft = (free: number, need: number): boolean =>
  free >= need + Math.min(need, COPY_MARGIN_BYTES);

/**
 * Refuses, for good and before anything is written, a copy of about `need` bytes where only
 * `free` are left: `where` names the place and what to do (a full disk is not a failure the
 * next attempt gets past).
 */
export function checkRoom(free: number, need: number, where: string): void {
  if (roomLeft(free, need)) return;
  const margin = Math.min(need, COPY_MARGIN_BYTES);
  throw new DriverError(
    `${where} has ${sized(free)} free; the copy needs about ${sized(need)} and ${sized(margin)} kept free`,
    { transient: false },
  );
}

/**
 * checkRoom for a copy of about `need` bytes through this machine's temporary directory (where
 * copies between hosts pass): what is free to this process there.
 */
export async function checkLocalRoom(need: number): Promise<void> {
  checkRoom((await localRoom()).bytes, need, LOCAL_ROOM);
}

/** This machine's temporary directory as a refusal names it. */
export const LOCAL_ROOM = 'The temporary directory of the vrp process that copies (TMPDIR)';

/** What is free to this process in this machine's temporary directory (read now). */
export async function localRoom(): Promise<Room> {
  const s = await statfs(tmpdir()).catch(tmpdirUnusable);
  return { bytes: s.bavail * s.bsize, fresh: true };
}

/** What each failure of a directory itself says of it. */
const DIRECTORY_FAILURES: Readonly<Record<string, string>> = {
  ENOENT: 'it does not exist',
  ENOTDIR: 'it is not a directory',
  EROFS: 'it is read-only',
  ENOSPC: 'it is full',
  EDQUOT: 'it is full',
  EACCES: 'this process may not use it',
  EPERM: 'this process may not use it',
};

/**
 * Throws, for a failure of this machine's temporary directory itself (missing, read-only, full,
 * not a directory, not this process's to use), a transient DriverError that says so: the copy's job is
 * tried again (the operator may mend it meanwhile, or another worker's machine do the copy),
 * and its error names the cause rather than an internal error. Not its path: a job's error is
 * the reseller's to read, and the operator knows their TMPDIR. Any other failure (too many open
 * files) is thrown as it is.
 */
function tmpdirUnusable(err: unknown): never {
  const why = directoryWords(err);
  throw why === undefined ? err : tmpdirError(why, err);
}

/** What DIRECTORY_FAILURES says of `err`, if it is a failure of a directory itself. */
const directoryWords = (err: unknown): string | undefined =>
  err instanceof Error && 'code' in err ? DIRECTORY_FAILURES[String(err.code)] : undefined;

/** The transient failure of this machine's temporary directory, saying `why`; a command's details (what it said) kept for the job's log. */
const tmpdirError = (why: string, cause: unknown) =>
  new DriverError(`${LOCAL_ROOM} cannot be used: ${why}`, {
    transient: true,
    cause,
    details: cause instanceof DriverError ? cause.details : undefined,
  });

/** Under this much free, a private directory whose copy failed counts as full (a copy writes in chunks of up to a few MiB). */
const FULL_BELOW_BYTES = 4 * 2 ** 20;

/** This process's own writes that fail where their disk is full or read-only. */
const DISK_WRITE_FAILURES = new Set(['ENOSPC', 'EDQUOT', 'EROFS']);

/** The commands that write into a private directory: a volume downloaded, an image converted, a seed made. */
const WRITES_HERE = /^(?:virsh (?:-c \S+ )?vol-download |qemu-img convert |genisoimage )/;

/**
 * `err`, the failure of a copy writing into private directory `dir`, as the failure of this
 * machine's temporary directory (transient, saying what is wrong, as at a copy's start) where
 * that is why it failed: a write of this process's own failed on a full or read-only disk
 * (ENOSPC, EDQUOT, EROFS), or a command that writes into the directory failed (WRITES_HERE) and
 * the directory is now read-only, gone, or has under FULL_BELOW_BYTES free (turned so during the
 * copy, or filled by another program). Anything else (a command on a host, a refusal) is `err`
 * itself. Never throws.
 */
export async function privateDirFailure(dir: string, err: unknown): Promise<unknown> {
  if (!(err instanceof DriverError)) {
    const own = err instanceof Error && 'code' in err && DISK_WRITE_FAILURES.has(String(err.code));
    const why = own ? directoryWords(err) : undefined;
    return why === undefined ? err : tmpdirError(why, err);
  }
  if (err.transient || !WRITES_HERE.test(err.details?.command ?? '')) return err;
  const why = await access(dir, constants.W_OK)
    .then(async () => {
      const s = await statfs(dir);
      return s.bavail * s.bsize < FULL_BELOW_BYTES ? DIRECTORY_FAILURES['ENOSPC'] : undefined;
    })
    .catch(directoryWords);
  return why === undefined ? err : tmpdirError(why, err);
}

/** Told of each private directory that could not be removed (set by the driver's maker, which logs it). */
let onStuckDir: ((dir: string, err: unknown) => void) | undefined;

/** Who is told of a private directory that could not be removed (the process's log). */
export function reportStuckPrivateDirs(report: (dir: string, err: unknown) => void): void {
  onStuckDir = report;
}

/**
 * Removes a private directory and what is in it, and never throws: one that cannot be removed
 * (its disk turned read-only) is reported (reportStuckPrivateDirs) and stays until a later
 * process's start sweeps it (sweepPrivateDirs); the copy's outcome, or its failure, is what its
 * caller gets all the same.
 */
export async function removePrivateDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true }).catch((err: unknown) => onStuckDir?.(dir, err));
}

/**
 * The key of the filesystem holding `path` on this machine as a place copies hold room on: the
 * machine's name and the filesystem's device (two directories of one disk share its room).
 */
async function machinePlace(path: string): Promise<string> {
  return `fs:${hostname()}:${(await stat(path)).dev}`;
}

/**
 * The key of this machine's temporary directory as a place copies hold room on (two processes
 * whose TMPDIR are two directories of one disk share its room, as does a pool there: place()).
 */
export const localPlace = (): Promise<string> => machinePlace(tmpdir()).catch(tmpdirUnusable);

/** This machine's name as private directories carry it (no dashes, no path separators). */
const machineName = () => hostname().replace(/[^A-Za-z0-9.]/g, '_');

/**
 * A process of this machine as its private directories name it: its PID namespace (the inode
 * of /proc/self/ns/pid: containers sharing a directory may share a machine name and PIDs), its
 * pid and its start time (field 22 of /proc/<pid>/stat: a pid used again, or a container's
 * PID 1 after a restart, is another process). `x` for the namespace where /proc says nothing:
 * such directories are never swept.
 */
interface ProcessMark {
  readonly ns: string;
  readonly pid: number;
  readonly start: string;
}

/** The start time of process `pid` as /proc gives it; undefined where it does not run (or /proc says nothing). */
async function processStart(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  // Fields after the command (in parentheses, which may hold anything) begin with field 3.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

let ownMark: Promise<ProcessMark> | undefined;
function thisProcess(): Promise<ProcessMark> {
  ownMark ??= (async () => {
    const ns = /\[(\d+)\]/.exec(await readlink('/proc/self/ns/pid').catch(() => ''))?.[1];
    const start = await processStart(process.pid);
    return ns && start ? { ns, pid: process.pid, start } : { ns: 'x', pid: process.pid, start: '0' };
  })();
  return ownMark;
}

/**
 * A new private directory on this machine (mode 0700) in its temporary directory, named after
 * the machine and this process (`vrp-lv-<machine>-<pid namespace>-<pid>-<start>-XXXXXX`), so
 * that a process started later can tell a dead process's files from a live one's
 * (sweepPrivateDirs).
 */
export async function makePrivateDir(): Promise<string> {
  const p = await thisProcess();
  return mkdtemp(join(tmpdir(), `vrp-lv-${machineName()}-${p.ns}-${p.pid}-${p.start}-`)).catch(
    tmpdirUnusable,
  );
}

/** How long a private directory named without its process (before 2026-12-07) is kept after its last change. */
const UNNAMED_PRIVATE_DIR_MS = 24 * 60 * 60_000;

/**
 * Removes from this machine's temporary directory the private directories of its processes that
 * have ended (one killed during a copy leaves its files, which would take that disk's room for
 * good), and those named without their process (by versions before 2026-12-07) a day after
 * their last change. A directory of another machine's name or PID namespace (a shared
 * directory), or of a process that still runs, stays; one that cannot be removed (another
 * user's) is counted in `failed`, and the others are still looked at.
 */
export async function sweepPrivateDirs(): Promise<{ removed: number; failed: number }> {
  const ours = machineName();
  const me = await thisProcess();
  let removed = 0;
  let failed = 0;
  for (const name of await readdir(tmpdir())) {
    const path = join(tmpdir(), name);
    try {
      const named = /^vrp-lv-([^-]+)-(\d+|x)-(\d+)-(\d+)-[A-Za-z0-9]{6}$/.exec(name);
      if (named) {
        const [, machine, ns, pid, start] = named;
        if (machine !== ours || ns !== me.ns || ns === 'x') continue;
        if ((await processStart(Number(pid))) === start) continue;
      } else if (/^vrp-lv-(export-)?[A-Za-z0-9]{6}$/.test(name)) {
        if (Date.now() - (await lstat(path)).mtimeMs < UNNAMED_PRIVATE_DIR_MS) continue;
      } else continue;
      await rm(path, { recursive: true, force: true });
      removed++;
    } catch {
      failed++;
    }
  }
  return { removed, failed };
}

/**
 * A private directory on this machine (makePrivateDir), removed after `use` whatever happens
 * (removePrivateDir); a failure of `use` because of the directory is privateDirFailure's.
 */
export async function withPrivateDir<T>(use: (dir: string) => Promise<T>): Promise<T> {
  const dir = await makePrivateDir();
  try {
    return await use(dir);
  } catch (err) {
    throw await privateDirFailure(dir, err);
  } finally {
    await removePrivateDir(dir);
  }
}

/** Whether a local file is a qcow2 image (its magic number, `QFI\xfb`). */
export async function isQcow2File(path: string): Promise<boolean> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await fh.read(head, 0, 4, 0);
    return bytesRead === 4 && head.equals(QCOW2_MAGIC);
  } finally {
    await fh.close();
  }
}
const QCOW2_MAGIC = Buffer.from([0x51, 0x46, 0x49, 0xfb]);

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The volume names in `virsh vol-list`'s table (` Name   Path`, a rule, one line per volume). */
export function parseVolumeList(stdout: string): string[] {
  const lines = stdout.split('\n');
  const rule = lines.findIndex((l) => /^-{3,}/.test(l.trim()));
  return lines
    .slice(rule + 1)
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter(Boolean);
}

const SIZE_UNITS: Record<string, number> = {
  B: 1,
  KiB: 2 ** 10,
  MiB: 2 ** 20,
  GiB: 2 ** 30,
  TiB: 2 ** 40,
  PiB: 2 ** 50,
  EiB: 2 ** 60,
};

/**
 * The largest volume of a `virsh vol-list --details` listing, in bytes: the larger of its
 * capacity and allocation, which virsh prints rounded (`20.00 GiB`); 0 for none.
 */
export function largestVolumeIn(stdout: string): number {
  let largest = 0;
  for (const m of stdout.matchAll(/([\d.]+) (B|[KMGTPE]iB)\s+([\d.]+) (B|[KMGTPE]iB)\s*$/gm)) {
    const size = (n?: string, unit?: string) => Number(n) * (SIZE_UNITS[unit ?? ''] ?? 0);
    largest = Math.max(largest, size(m[1], m[2]), size(m[3], m[4]));
  }
  return Math.ceil(largest);
}

/** A capacity as vol-create-as takes it (`10G`, `512M`, bytes) in bytes. */
export function capacityBytes(capacity: string): number {
  const m = /^(\d+)([KMGT]?)$/i.exec(capacity.trim());
  if (!m) throw new DriverError(`Not a volume size: ${capacity}`, { transient: false });
  const unit = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 }[(m[2] ?? '').toUpperCase()] ?? 1;
  return Number(m[1]) * unit;
}

/** A volume's sizes as libvirt reports them (`vol-info --bytes`). */
export interface VolumeInfo {
  readonly capacity: number;
  readonly allocation: number;
}

/**
 * The driver's view of one host's pool, through the host's libvirt connection only: nothing of
 * a host is read or written on this machine's own filesystem. Volume files live at
 * `<pool path>/<name>`, the pool path being VRP_LIBVIRT_STORAGE on every host (each host its
 * own directory).
 */
export interface PoolStorage {
  /** Defines, builds, starts and autostarts the pool where it is missing; resolves to its path. */
  ready(uri: string): Promise<string>;
  /** The names of the pool's volumes (one `vol-list`). */
  list(uri: string): Promise<Set<string>>;
  info(uri: string, name: string): Promise<VolumeInfo | undefined>;
  createAs(
    uri: string,
    name: string,
    capacity: string,
    format: 'raw' | 'qcow2',
    backing?: { readonly volume: string; readonly format: 'qcow2' },
  ): Promise<void>;
  /**
   * A new volume with the local file's bytes (vol-create-as raw of the file's size, vol-upload);
   * a `.qcow2` volume whose file is a qcow2 is read again by the pool (refresh, waiting for
   * another volume's copy), so libvirt knows it as the qcow2 of its virtual size. `limit`: by
   * default the file's size at the commands' pace (CopyLimit); `refreshWaitMs`: that read's
   * wait (refresh).
   */
  uploadNew(
    uri: string,
    name: string,
    file: string,
    limit?: CopyLimit,
    refreshWaitMs?: number,
  ): Promise<void>;
  /** `limit`: by default the volume's size (bytesOf) at the commands' pace. */
  download(uri: string, name: string, file: string, limit?: CopyLimit): Promise<void>;
  /** Deletes the volume; one that does not exist is already deleted. */
  remove(uri: string, name: string): Promise<void>;
  /**
   * Throws (not transient) unless libvirt knows the volume as a qcow2, after reading the pool
   * again if it first says otherwise (an upload it did not read again: uploadNew). Returns the
   * volume's size and allocation from the same read.
   */
  checkQcow2(uri: string, name: string): Promise<VolumeInfo>;
  /**
   * A standalone copy of `from` (its backing chain folded in) as the new volume `name`, on the
   * same host; a `.qcow2` source is checked first (checkQcow2). libvirtd copies and tells
   * nothing of its progress: the copy has its size's time (CopyLimit), with no stall check.
   */
  cloneFlat(uri: string, from: string, name: string): Promise<void>;
  /** Copies a volume from one host to another through this machine (a private temp file). */
  copyBetween(fromUri: string, name: string, toUri: string, toName?: string): Promise<void>;
  /**
   * Rereads the pool directory (files QEMU created become volumes; a volume whose file is gone
   * leaves the listing). libvirt refuses while a volume is being built in the pool: the refresh
   * tries again until `waitMs` has passed (default: as long as a copy of the pool's largest
   * volume may take at the commands' pace, CopyLimit, read when first refused), then fails as
   * transient; with 0 it tries once.
   */
  refresh(uri: string, waitMs?: number): Promise<void>;
  /**
   * Bytes free in the pool to QEMU's user: `pool-info --bytes`' Available less 5% of its
   * Capacity (POOL_RESERVE), read again from the host's filesystem first (a refresh; libvirt's
   * figure is otherwise that of the last one) unless a copy into the pool holds it (then the
   * last figure: `fresh` false). A pool whose directory is on this machine (place() keys it by
   * its filesystem): what its filesystem has free to users other than root, read now.
   */
  room(uri: string): Promise<Room>;
  /**
   * The key of host `hostId`'s pool (at `uri`) as a place copies hold room on: for this
   * machine's system libvirt (qemu:///system), the filesystem of the pool's directory here, one
   * place with this machine's temporary directory where they share a disk (their copies counted
   * together); elsewhere (or where the directory cannot be read) `pool:<host id>`.
   */
  place(hostId: string, uri: string): Promise<string>;
}

/** A place's free bytes as read, and whether read from the place now (`fresh`) or a figure from before. */
export interface Room {
  readonly bytes: number;
  readonly fresh: boolean;
}

/** @param pace how copies are limited (commands.ts): a refused refresh waits as long as one may take. */
export function createPoolStorage(
  commands: Commands,
  poolPath: string,
  pace: CopyPace = DEFAULT_COPY_PACE,
): PoolStorage {
  const { virsh } = commands;
  /** Each connection's pool, checked once per process (a failed check is tried again). */
  const readyPools = new Map<string, Promise<string>>();
  /** The connections whose current ready() went through (until forgotten). */
  const readyNow = new Set<string>();
  /** The connections whose pool this process has prepared at least once (never forgotten). */
  const preparedOnce = new Set<string>();
  /** Forgets the connection's pool: the next ready() checks and prepares it again. */
  const forget = (uri: string) => {
    readyPools.delete(uri);
    readyNow.delete(uri);
  };
  /**
   * The pool's largest volume in bytes (`vol-list --details`, which libvirt answers while a copy
   * runs): no copy within the pool reads more (cloneFlat's limit is its source's size); 0 if unread.
   */
  const largestVolume = (uri: string) =>
    virsh(uri, ['vol-list', '--details', POOL], 'Could not list the storage volumes').then(
      (r) => largestVolumeIn(r.stdout),
      () => 0,
    );
  /**
   * A read of the pool (`read`); one that finds the pool gone or stopped since this process
   * prepared it (undefined or `pool-destroy`ed by hand, stopped by libvirt after a failed
   * refresh) prepares it again (ready: defined, started, its volumes read again) and reads once
   * more (as a restarted process's first ready() would), also after this process forgot it (a
   * failed refresh, a failed preparation); a preparation that fails then fails the read with its
   * error (for now, or for good where it says so: a pool at another path). A read during a
   * preparation under way waits for it and reads again. A pool this process has not begun to prepare is left as it is: the error
   * says so (isNoPool), and a host never prepared has no volumes for the callers that read it so.
   */
  async function readPool<T>(uri: string, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (err) {
      if (!(isNoPool(err) || isPoolStopped(err)) || !(readyPools.has(uri) || preparedOnce.has(uri)))
        throw err;
      // Gone since it was prepared (or forgotten since: a failed refresh, a failed preparation):
      // prepared again. A preparation under way: waited for.
      if (readyNow.has(uri)) forget(uri);
      await storage.ready(uri).catch((cause: unknown) => {
        throw new DriverError(
          `The host's storage pool was gone or stopped, and could not be prepared again: ${messageOf(cause)}`,
          {
            transient: cause instanceof DriverError ? cause.transient : true,
            cause,
            details: cause instanceof DriverError ? cause.details : undefined,
          },
        );
      });
      return read();
    }
  }

  /** Errors that mean another job (or process) did the same step first: the step is done. */
  const alreadyDone = (err: unknown) =>
    /already exists|already active|is already|already in use/i.test(stderrOf(err));

  async function makeReady(uri: string): Promise<string> {
    const what = 'Could not prepare the storage pool';
    const { stdout: pools } = await virsh(uri, ['pool-list', '--all', '--name'], what);
    if (!pools.split('\n').some((l) => l.trim() === POOL)) {
      await virsh(uri, ['pool-define-as', POOL, 'dir', '--target', poolPath], what).catch((err) => {
        if (!alreadyDone(err)) throw err;
      });
    }
    const { stdout: xml } = await virsh(uri, ['pool-dumpxml', POOL], what);
    const path = /<target>\s*<path>([^<]+)<\/path>/.exec(xml)?.[1];
    if (path !== poolPath) {
      throw new DriverError(
        `The host's storage pool ${POOL} is at ${path ?? 'an unknown path'}, not at ${poolPath} (VRP_LIBVIRT_STORAGE)`,
        { transient: false },
      );
    }
    const { stdout: poolInfo } = await virsh(uri, ['pool-info', POOL], what);
    if (!/^State:\s+running/m.test(poolInfo)) {
      // pool-build of a dir pool makes the directory (mode 0711) and accepts one that exists.
      await virsh(uri, ['pool-build', POOL], what).catch((err) => {
        if (!alreadyDone(err)) throw err;
      });
      await virsh(uri, ['pool-start', POOL], what).catch((err) => {
        if (!alreadyDone(err)) throw err;
      });
    }
    if (!/^Autostart:\s+yes/m.test(poolInfo)) await virsh(uri, ['pool-autostart', POOL], what);
    return poolPath;
  }

  const storage: PoolStorage = {
    ready(uri) {
      let known = readyPools.get(uri);
      if (!known) {
        // Shared by the jobs that wait on it: no one attempt's fence stops it (fence.ts).
        const making = unfenced(() => makeReady(uri));
        known = making;
        making.then(
          () => {
            if (readyPools.get(uri) !== making) return;
            readyNow.add(uri);
            preparedOnce.add(uri);
          },
          () => {
            if (readyPools.get(uri) === making) readyPools.delete(uri);
          },
        );
        readyPools.set(uri, known);
      }
      return known;
    },

    list(uri) {
      return readPool(uri, async () => {
        const { stdout } = await virsh(uri, ['vol-list', POOL], 'Could not list the storage volumes');
        return new Set(parseVolumeList(stdout));
      });
    },

    info(uri, name) {
      return readPool(uri, async () => {
        try {
          const { stdout } = await virsh(
            uri,
            ['vol-info', '--bytes', '--pool', POOL, name],
            'Could not read a storage volume',
          );
          return {
            capacity: figureIn(stdout, 'Capacity') ?? 0,
            allocation: figureIn(stdout, 'Allocation') ?? 0,
          };
        } catch (err) {
          if (isNoVolume(err)) return undefined;
          throw err;
        }
      });
    },

    async createAs(uri, name, capacity, format, backing) {
      if (format === 'qcow2') {
        // qcow2 v3 (compat 1.1): only it holds the persistent dirty bitmaps of libvirt's
        // checkpoints (incremental backups); vol-create-as makes v2 (compat 0.10).
        await withPrivateDir(async (dir) => {
          const xml = join(dir, 'volume.xml');
          const esc = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
          const backingXml = backing
            ? `<backingStore><path>${esc(join(poolPath, backing.volume))}</path><format type='${backing.format}'/></backingStore>`
            : '';
          await writeFile(
            xml,
            `<volume><name>${esc(name)}</name><capacity unit='bytes'>${capacityBytes(capacity)}</capacity>` +
              `<target><format type='qcow2'/><compat>1.1</compat></target>${backingXml}</volume>\n`,
          );
          await virsh(uri, ['vol-create', POOL, xml], 'Could not create a storage volume');
        });
        return;
      }
      await virsh(
        uri,
        [
          'vol-create-as',
          POOL,
          name,
          capacity,
          '--format',
          format,
          ...(backing ? ['--backing-vol', backing.volume, '--backing-vol-format', backing.format] : []),
        ],
        'Could not create a storage volume',
      );
    },

    async uploadNew(uri, name, file, limit, refreshWaitMs) {
      const size = (await stat(file)).size;
      await storage.createAs(uri, name, String(Math.max(size, 1)), 'raw');
      try {
        await virsh(
          uri,
          ['vol-upload', '--sparse', '--pool', POOL, name, file],
          'Could not upload a storage volume',
          limit ?? { bytes: size },
        );
        // The volume was made raw, of the file's size. libvirt reads an upload's format and
        // size again after it, by reading the whole pool again, which it skips (silently) while
        // another volume is being built in the pool: a qcow2 would stay a raw volume of the
        // wrong size (a resize that grows nothing, a copy that takes the qcow2's bytes for a
        // disk's). So the pool is read again here, waiting for such a copy (refresh).
        if (name.endsWith('.qcow2') && (await isQcow2File(file))) await storage.refresh(uri, refreshWaitMs);
      } catch (err) {
        await storage.remove(uri, name).catch(() => {});
        throw err;
      }
    },

    async download(uri, name, file, limit) {
      await virsh(
        uri,
        ['vol-download', '--sparse', '--pool', POOL, name, file],
        'Could not download a storage volume',
        limit ?? { bytes: bytesOf(await storage.info(uri, name)) },
      );
    },

    async remove(uri, name) {
      await virsh(uri, ['vol-delete', '--pool', POOL, name], 'Could not delete a storage volume').catch(
        (err) => {
          if (!isNoVolume(err)) throw err;
        },
      );
    },

    async checkQcow2(uri, name) {
      const read = async () => {
        const { stdout } = await readPool(uri, () =>
          virsh(uri, ['vol-dumpxml', '--pool', POOL, name], 'Could not read a storage volume'),
        );
        const { capacity, allocation } = parseVolumeXml(stdout);
        return { format: /<format type='([^']+)'/.exec(stdout)?.[1], size: { capacity, allocation } };
      };
      const first = await read();
      if (first.format === 'qcow2') return first.size;
      await storage.refresh(uri);
      const { format, size } = await read();
      if (format === 'qcow2') return size;
      throw new DriverError(
        `The volume ${name} is not a qcow2 image (libvirt reads it as ${format ?? 'nothing'})`,
        {
          transient: false,
        },
      );
    },

    async cloneFlat(uri, from, name) {
      // The copy reads `from` as the format libvirt knows it by: a qcow2 known as raw (an upload
      // libvirt did not read again: uploadNew) would be copied as a disk holding the qcow2's
      // bytes. Every `.qcow2` volume of the driver is a qcow2.
      const bytes = bytesOf(
        from.endsWith('.qcow2') ? await storage.checkQcow2(uri, from) : await storage.info(uri, from),
      );
      await withPrivateDir(async (dir) => {
        const xml = join(dir, 'volume.xml');
        await writeFile(
          xml,
          `<volume><name>${name}</name><capacity>0</capacity><target><format type='qcow2'/><compat>1.1</compat></target></volume>\n`,
        );
        await virsh(
          uri,
          ['vol-create-from', POOL, xml, '--inputpool', POOL, from],
          'Could not copy a storage volume',
          { bytes, progress: UNSEEN },
        );
      });
    },

    async room(uri) {
      // A pool on this machine's filesystem (place()) is read as this machine's temporary
      // directory is, now: one place, one kind of figure (libvirt's may be one from before).
      if (isLocalSystem(uri)) {
        const here = await statfs(poolPath).catch(() => undefined);
        if (here) return { bytes: here.bavail * here.bsize, fresh: true };
      }
      const fresh = await storage.refresh(uri, 0).then(
        () => true,
        (err: unknown) => {
          if (!isPoolBusy(err)) throw err;
          return false;
        },
      );
      const { stdout } = await virsh(uri, ['pool-info', '--bytes', POOL], 'Could not read the storage pool');
      const available = figureIn(stdout, 'Available');
      const capacity = figureIn(stdout, 'Capacity');
      if (available === undefined || capacity === undefined)
        throw new DriverError(`The host's storage pool ${POOL} did not say how much room it has`, {
          transient: true,
        });
      return { bytes: Math.max(0, available - Math.ceil(capacity * POOL_RESERVE)), fresh };
    },

    async place(hostId, uri) {
      const here = isLocalSystem(uri) ? await machinePlace(poolPath).catch(() => undefined) : undefined;
      return here ?? `pool:${hostId}`;
    },

    async copyBetween(fromUri, name, toUri, toName = name) {
      // Through a file here: refused at once if it cannot fit (the volume's allocated bytes:
      // downloaded sparse).
      const info = await storage.info(fromUri, name);
      await checkLocalRoom(info?.allocation ?? 0);
      await withPrivateDir(async (dir) => {
        const file = join(dir, 'volume');
        await storage.download(fromUri, name, file, { bytes: bytesOf(info) });
        await storage.remove(toUri, toName);
        await storage.uploadNew(toUri, toName, file);
      });
    },

    async refresh(uri, waitMs) {
      const started = performance.now();
      let until = waitMs === undefined ? undefined : started + waitMs;
      for (let pause = 250; ; pause = Math.min(pause * 2, 5000)) {
        try {
          await virsh(uri, ['pool-refresh', POOL], 'Could not read the storage pool');
          return;
        } catch (err) {
          if (!isPoolBusy(err)) {
            // libvirt marks a pool whose refresh failed inactive: the next ready() checks it
            // again (and starts it) instead of trusting this process's earlier check.
            forget(uri);
            throw err;
          }
          // By default as long as the copy that holds the pool may take: one of the pool's
          // largest volume (read once, when first refused), whichever copy it is.
          until ??= started + copyTimeMs(await largestVolume(uri), pace);
          if (performance.now() + pause > until)
            throw new DriverError("The host's storage pool is busy with a copy", {
              transient: true,
              cause: err,
              details: err instanceof DriverError ? err.details : undefined,
            });
          // A run whose fence went down (fence.ts) stops waiting at once.
          await sleep(pause, undefined, { signal: fenceSignal() }).catch(() => {});
          checkFence();
        }
      }
    },
  };
  return storage;
}
