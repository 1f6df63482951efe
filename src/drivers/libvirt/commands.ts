import { type ChildProcess, execFile } from 'node:child_process';
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
 * The commands one driver runs (virsh; genisoimage and isoinfo for seeds). Failures become DriverErrors
 * with a readable message for the reseller (`what`) and the command, its exit status and its
 * stderr as `details`, for the logs only. The running ones are tracked, so that shutting the
 * driver down ends them rather than leaving them behind the process.
 */
export interface Commands {
  run(command: string, args: readonly string[], what: string, timeoutMs?: number): Promise<CommandResult>;
  /** A virsh call on one host's connection. */
  virsh(uri: string, args: readonly string[], what: string, timeoutMs?: number): Promise<CommandResult>;
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

/** @param onTiming told of every command once it has ended (succeeded or failed). */
export function createCommands(onTiming?: (t: CommandTiming) => void): Commands {
  /** Each running child, with a promise settled once it has exited. */
  const running = new Map<ChildProcess, Promise<void>>();
  let closed = false;

  function run(
    command: string,
    args: readonly string[],
    what: string,
    timeoutMs = 120_000,
    input?: string,
  ): Promise<CommandResult> {
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
      const child = execFile(
        command,
        [...args],
        // The C locale: virsh translates what it prints (a domain's state, pool-info's labels, its
        // errors), and the driver reads those words; a host whose locale is German would have every
        // VM read as stopped.
        {
          timeout: timeoutMs,
          maxBuffer: 16 * 1024 * 1024,
          env: { ...process.env, LC_ALL: 'C' },
          ...(fence && { signal: fence }),
        },
        (err, stdout, stderr) => {
          running.delete(child);
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
          const transient = e.killed === true || closed || TRANSIENT.test(stderr);
          // Whether it is tried again is the job's decision, so the message does not promise it.
          const why = closed
            ? ' (the provider is shutting down)'
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
    virsh: (uri, args, what, timeoutMs) => run('virsh', ['-c', uri, ...args], what, timeoutMs),
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
