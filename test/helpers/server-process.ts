/**
 * A real server process (`node src/main.ts`, or the build as the launchers run it) on a free
 * loopback port, for end-to-end tests and the bench.
 * `kill()` sends a signal (SIGKILL simulates a crash); `stop()` shuts it down gracefully.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { freePort } from '../../scripts/postgres.ts';
import { WAIT_MS } from './budget.ts';

/**
 * The flags node runs the server with, as every launcher gives them (package.json's start, the
 * systemd units of deploy/, Containerfile; test/deploy/launchers.test.ts keeps them alike), so
 * that the tests and the bench run the server as it runs in production: V8's young generation
 * kept to 16 MB per half (not 32), and its old generation collected once it has grown by half,
 * which bound the peak memory under load (docs/deploy.md, "Memory"). V8 sizes its heap as the
 * process starts: the flags work only on node's command line.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16', '--heap-growing-percent=50'];

/**
 * The environment every launcher gives the server beside its settings (kept alike as the flags
 * are): at most two malloc arenas of the C library, where it would make one per thread that
 * allocates (docs/deploy.md, "Memory"). Read by the C library as the process starts.
 */
export const SERVER_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/** What every launcher runs: the server built as JavaScript (scripts/build.ts). */
export const SERVER_PROGRAM = 'dist/main.js';

let built = false;

/**
 * The server as the launchers run it: this checkout's build, brought up to date with its source
 * first (once per process; nothing is written when it is current).
 */
export function serverProgram(): string {
  if (!built) {
    execFileSync(process.execPath, ['scripts/build.ts'], {
      cwd: resolve(import.meta.dirname, '..', '..'),
      stdio: 'ignore',
    });
    built = true;
  }
  return SERVER_PROGRAM;
}

export interface ServerProcess {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Everything the process wrote to stderr/stdout (for failure messages). */
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  stop(): Promise<number | null>;
}

export async function startServer(
  env: Record<string, string>,
  timeoutMs = WAIT_MS,
  /** The checkout to run (another version of the program, for upgrade tests); this one by default. */
  cwd?: string,
  /**
   * What to run: the source by default, so that the tests' coverage of src/ counts what the
   * server runs; `serverProgram()` for the build, as the launchers and the bench run it.
   */
  program = 'src/main.ts',
  /** Where the port comes from (a test of this retry gives one that is taken). */
  nextPort: () => Promise<number> = freePort,
): Promise<ServerProcess> {
  // The port is free when asked for, not held: another process may bind it before the server
  // does. A server that finds it taken exits at once, and is started again on another.
  for (let attempt = 1; ; attempt++) {
    const port = await nextPort();
    const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, program], {
      ...(cwd === undefined ? {} : { cwd }),
      env: {
        ...process.env,
        ...SERVER_ENV,
        VRP_LOG_LEVEL: 'warn',
        VRP_RATE_LIMIT: '0',
        // A /22 rather than the default /16: a fresh store fills its pool at start-up (65,534 rows
        // cost ~70 ms of CPU), and 1,022 addresses are more than any of these tests takes.
        VRP_SIM_IP_POOL: '10.80.0.0/22',
        ...env,
        VRP_PORT: String(port),
        VRP_HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = keptOutput(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const closed = new Promise((resolve) => child.once('close', resolve));
    const url = `http://127.0.0.1:${port}`;
    const up = await healthy(child, url, output, closed, timeoutMs);
    if (up === 'port taken' && attempt < 3) continue;
    if (up !== 'up') throw new Error(`server exited with ${child.exitCode}:\n${output()}`);
    return serverProcess(url, port, child, output, exited);
  }
}

/**
 * Waits until the server answers /healthz ('up'), or it exits ('port taken' when it says its
 * port is in use, else 'exited'); throws past `timeoutMs`, the server killed.
 */
async function healthy(
  child: ChildProcess,
  url: string,
  output: () => string,
  closed: Promise<unknown>,
  timeoutMs: number,
): Promise<'up' | 'port taken' | 'exited'> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) {
      await closed; // its output read to the end
      return PORT_TAKEN.test(output()) ? 'port taken' : 'exited';
    }
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return 'up';
    } catch {
      // not listening yet
    }
    if (Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`server did not start within ${timeoutMs} ms:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What the server says when its port is taken (src/main.ts). */
const PORT_TAKEN = /cannot listen on [^\n]*: address already in use/;

function serverProcess(
  url: string,
  port: number,
  child: ChildProcess,
  output: () => string,
  exited: Promise<number | null>,
): ServerProcess {
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  return {
    url,
    port,
    child,
    output,
    kill,
    stop: () => kill('SIGTERM'),
  };
}

/**
 * Starts a server for each of `envs` at once, adding each to `into` as soon as it is up, so
 * that the test's cleanup stops every one that started even when another failed to (a lone
 * survivor would keep the test process alive). Throws the first failure once all have settled.
 */
export async function startServers(
  envs: readonly Record<string, string>[],
  into: ServerProcess[],
  timeoutMs?: number,
): Promise<ServerProcess[]> {
  const settled = await Promise.allSettled(
    envs.map(async (env) => {
      const server = await startServer(env, timeoutMs);
      into.push(server);
      return server;
    }),
  );
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<ServerProcess>).value);
}

export interface WorkerProcess {
  readonly child: ChildProcess;
  /** Everything the process wrote to stderr/stdout. */
  output(): string;
  /** Sends `signal` (SIGTERM: a graceful stop) unless it has exited; resolves when it has. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * A worker-only process (`VRP_ROLE=worker`, which does not listen) of this checkout's source,
 * what it writes kept; at `warn` unless `env` says otherwise.
 */
export function startWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, 'src/main.ts'], {
    env: { ...process.env, ...SERVER_ENV, VRP_LOG_LEVEL: 'warn', ...env, VRP_ROLE: 'worker' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = keptOutput(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** What `child` writes to stdout and stderr, kept as it comes. */
function keptOutput(child: ChildProcess): () => string {
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  return () => out;
}
