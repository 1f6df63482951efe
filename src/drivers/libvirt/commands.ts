import { type ChildProcess, execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { type CommandDetails, DriverError } from '../driver.ts';
import { checkFence, fenceSignal } from '../fence.ts';

export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Messages of libvirt and QEMU that mean "try again later", not "this cannot work". A volume
 * "still being allocated" is one whose copy (`vol-create-from`) libvirtd goes on with after the
 * command that asked for it was ended at its time limit: it can be deleted once that ends. One
 * "still in use" is the source of such a copy (an earlier attempt's): likewise. A host out of
 * migration ports (two per live move with its disks, 64 in libvirt's default range) has them
 * again once other moves to it end.
 */
const TRANSIENT =
  /failed to connect|Cannot recv data|End of file while reading|Timed out during operation|cannot acquire state change lock|Connection reset|Broken pipe|is not running.*daemon|Failed to get "write" lock|is still being allocated|volume '[^']*' is still in use|Unable to find an unused port/i;

/** How long ended commands get to exit on SIGTERM before they are killed. */
const END_GRACE_MS = 5000;

/**
 * A copy's time limit, instead of a fixed one: the time its bytes take at the slowest rate
 * accepted (CopyPace) plus `COPY_BASE_MS`, and it is ended sooner once it moves less than
 * `STALL_BYTES` in `stallMs`. A disk of any size is copied, and one that hangs is not waited for
 * by the hour.
 */
export interface CopyLimit {
  /** The bytes the copy moves at most (a disk's virtual size, a file's length). */
  readonly bytes: number;
  /**
   * The bytes it has moved so far, read every few seconds: by default the command's own reads
   * and writes (`rchar` + `wchar` of `/proc/<pid>/io`: virsh's vol-upload and vol-download pass
   * every byte through themselves, qemu-img reads and writes them); a copy done by another
   * process (libvirtd's, QEMU's) reads its own figure. `undefined`: cannot tell now (no stall
   * is counted for it).
   */
  readonly progress?: (pid: number) => Promise<number | undefined>;
}

/** How copies are limited (VRP_COPY_STALL, VRP_COPY_MIN_RATE). */
export interface CopyPace {
  /** A copy that moves less than STALL_BYTES in this long is ended (transient). */
  readonly stallMs: number;
  /** The slowest rate a copy is given time for, in bytes per second. */
  readonly minBytesPerSecond: number;
  /** What every copy is given besides its bytes' time (default COPY_BASE_MS). */
  readonly baseMs?: number;
}

/** What every copy is given besides its bytes' time: the fixed limit copies had before. */
export const COPY_BASE_MS = 30 * 60_000;
/** Less than this moved in a stall window is no progress (libvirt's keepalives are a few bytes). */
export const STALL_BYTES = 1024 * 1024;
export const DEFAULT_COPY_PACE: CopyPace = { stallMs: 5 * 60_000, minBytesPerSecond: 10 * 1024 * 1024 };

/** The longest a Node timer waits (2^31 - 1 ms, about 24.8 days); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A copy's whole time limit at `pace` (at most MAX_TIMER_MS). */
export function copyTimeMs(bytes: number, pace: CopyPace): number {
  const ms = (pace.baseMs ?? COPY_BASE_MS) + Math.ceil((Math.max(0, bytes) / pace.minBytesPerSecond) * 1000);
  return Math.min(ms, MAX_TIMER_MS);
}

/** A process's bytes read and written so far (Linux's `/proc/<pid>/io`); undefined where it cannot be read. */
export async function processIoBytes(pid: number): Promise<number | undefined> {
  const text = await readFile(`/proc/${pid}/io`, 'utf8').catch(() => undefined);
  const field = (name: string) => Number(new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(text ?? '')?.[1]);
  const bytes = field('rchar') + field('wchar');
  return Number.isFinite(bytes) ? bytes : undefined;
}

/** A duration for messages: minutes, seconds under a minute, ms under a second. */
export function spellMs(ms: number): string {
  if (ms >= 60_000) return `${Math.round(ms / 60_000)} min`;
  return ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms)} ms`;
}

/**
 * Reads `progress` every fifth of `stallMs` (50 ms to 10 s) and calls `stalled` once it has
 * grown by less than STALL_BYTES for `stallMs`. A read that cannot tell counts neither way.
 * Returns its stop.
 */
export function watchProgress(
  progress: () => Promise<number | undefined>,
  stallMs: number,
  stalled: () => void,
): () => void {
  const every = Math.min(10_000, Math.max(50, Math.floor(stallMs / 5)));
  let stopped = false;
  let mark: number | undefined;
  let since = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    const moved = await progress().catch(() => undefined);
    if (stopped) return;
    if (moved !== undefined && (mark === undefined || moved - mark >= STALL_BYTES)) {
      mark = moved;
      since = performance.now();
    } else if (moved !== undefined && performance.now() - since >= stallMs) {
      stopped = true;
      stalled();
      return;
    }
    timer = setTimeout(tick, every);
  };
  timer = setTimeout(tick, every);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/**
 * The commands one driver runs (virsh; genisoimage and isoinfo for seeds). Failures become DriverErrors
 * with a readable message for the reseller (`what`) and the command, its exit status and its
 * stderr as `details`, for the logs only. The running ones are tracked, so that shutting the
 * driver down ends them rather than leaving them behind the process.
 */
export interface Commands {
  /** `limit`: a time limit in ms (default 2 minutes), or a copy's (CopyLimit, at the commands' pace). */
  run(
    command: string,
    args: readonly string[],
    what: string,
    limit?: number | CopyLimit,
  ): Promise<CommandResult>;
  /** A virsh call on one host's connection. */
  virsh(
    uri: string,
    args: readonly string[],
    what: string,
    limit?: number | CopyLimit,
  ): Promise<CommandResult>;
  /**
   * virsh commands given on its standard input (its shell), for those whose arguments must not
   * show in the process table or in error details (a password). virsh's shell exits 0 whatever
   * its commands did: the caller reads their output.
   */
  virshShell(uri: string, script: string, what: string, timeoutMs?: number): Promise<CommandResult>;
  /** Ends the commands still running (SIGTERM, then SIGKILL) and waits for them; later ones fail (transient). */
  close(): Promise<void>;
}

/** One finished command and how long it took: the driver's share of a job, for logs and the bench. */
export interface CommandTiming {
  /** The program and its first argument after the connection (`virsh define`, `qemu-img create`). */
  readonly command: string;
  readonly ms: number;
  readonly ok: boolean;
}

/** `virsh -c URI define FILE` -> `virsh define`; `qemu-img create ...` -> `qemu-img create`. */
function shortName(command: string, args: readonly string[]): string {
  if (command === 'virsh' && args[0] === '-q') return 'virsh shell';
  const rest = command === 'virsh' && args[0] === '-c' ? args.slice(2) : args;
  // Several commands in one argument (`-q 'a; b; ...'`: template-sweep.ts).
  if (command === 'virsh' && rest[0] === '-q') return 'virsh batch';
  return rest[0] ? `${command} ${rest[0]}` : command;
}

/**
 * @param onTiming told of every command once it has ended (succeeded or failed).
 * @param pace how copies are limited (CopyLimit).
 */
export function createCommands(
  onTiming?: (t: CommandTiming) => void,
  pace: CopyPace = DEFAULT_COPY_PACE,
): Commands {
  /** Each running child, with a promise settled once it has exited. */
  const running = new Map<ChildProcess, Promise<void>>();
  let closed = false;

  function run(
    command: string,
    args: readonly string[],
    what: string,
    limit: number | CopyLimit = 120_000,
    input?: string,
  ): Promise<CommandResult> {
    const copy = typeof limit === 'number' ? undefined : limit;
    const timeoutMs = typeof limit === 'number' ? limit : copyTimeMs(limit.bytes, pace);
    const line = `${command} ${args.join(' ')}`;
    // A job attempt whose lease ran out takes no further step on a host (fence.ts), and the
    // command under way when it does is ended (as the process's death would end it).
    try {
      checkFence();
    } catch (err) {
      return Promise.reject(err);
    }
    const fence = fenceSignal();
    if (closed) {
      return Promise.reject(
        new DriverError(`${what} (the provider is shutting down)`, {
          transient: true,
          details: {
            command: line,
            exitCode: null,
            signal: null,
            stderr: 'not started: the driver is closed',
          },
        }),
      );
    }
    const started = performance.now();
    return new Promise((resolve, reject) => {
      let exited!: () => void;
      let stalled = false;
      let unwatch = () => {};
      const child = execFile(
        command,
        [...args],
        // The C locale: virsh translates what it prints (a domain's state, pool-info's labels, its
        // errors), and the driver reads those words; a host whose locale is German would have every
        // VM read as stopped.
        {
          timeout: timeoutMs,
          // A large disk's export map (`qemu-img map`, ~100 bytes per extent) may hold millions
          // of extents; virsh's answers are small.
          maxBuffer: 256 * 1024 * 1024,
          env: { ...process.env, LC_ALL: 'C' },
          ...(fence && { signal: fence }),
        },
        (err, stdout, stderr) => {
          running.delete(child);
          unwatch();
          exited();
          onTiming?.({ command: shortName(command, args), ms: performance.now() - started, ok: !err });
          if (!err) return resolve({ stdout, stderr });
          if (fence?.aborted) return reject(fence.reason);
          const e = err as { code?: number | string; signal?: string | null; killed?: boolean };
          const details: CommandDetails = {
            command: line,
            exitCode: typeof e.code === 'number' ? e.code : null,
            signal: e.signal ?? null,
            stderr: (stderr || err.message).trim(),
          };
          const transient = e.killed === true || stalled || closed || TRANSIENT.test(stderr);
          // Whether it is tried again is the job's decision, so the message does not promise it.
          const why = closed
            ? ' (the provider is shutting down)'
            : stalled
              ? ` (the copy moved no data for ${spellMs(pace.stallMs)})`
              : copy && e.killed === true
                ? ` (the copy took longer than its ${spellMs(timeoutMs)})`
                : transient
                  ? ' (the host did not answer)'
                  : '';
          reject(
            new DriverError(`${what}${why}`, {
              transient,
              details,
              cause: new Error(`${line}: ${details.stderr}`),
            }),
          );
        },
      );
      if (input !== undefined) child.stdin?.end(input);
      const pid = child.pid;
      if (copy && pid !== undefined)
        unwatch = watchProgress(
          () => (copy.progress ?? processIoBytes)(pid),
          pace.stallMs,
          () => {
            stalled = true;
            child.kill('SIGTERM');
          },
        );
      running.set(
        child,
        new Promise<void>((r) => {
          exited = r;
        }),
      );
    });
  }

  return {
    run,
    virsh: (uri, args, what, limit) => run('virsh', ['-c', uri, ...args], what, limit),
    virshShell: (uri, script, what, timeoutMs) => run('virsh', ['-q', '-c', uri], what, timeoutMs, script),
    async close() {
      closed = true;
      const children = [...running];
      for (const [child] of children) child.kill('SIGTERM');
      const force = setTimeout(() => {
        for (const [child] of children) child.kill('SIGKILL');
      }, END_GRACE_MS);
      await Promise.all(children.map(([, exited]) => exited));
      clearTimeout(force);
    },
  };
}

/** virsh's words for "there is no such domain", which idempotent operations accept. */
export function isNoDomain(err: unknown): boolean {
  return /failed to get domain|Domain not found|no domain with matching/i.test(stderrOf(err));
}

export function isNotRunning(err: unknown): boolean {
  return /domain is not running|not running/i.test(stderrOf(err));
}

export function stderrOf(err: unknown): string {
  return err instanceof DriverError ? (err.details?.stderr ?? '') : '';
}
