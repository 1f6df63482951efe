/**
 * A throwaway PostgreSQL server for tests and benchmarks: initdb into a temporary directory,
 * pg_ctl start on a free loopback port, stop and delete afterwards. PostgreSQL refuses to
 * run as root, so as root it runs as the `postgres` user (runuser).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childrenOf, processCpu } from './processes.ts';
import { findPostgresBin } from './test-tools.ts';

export interface PostgresServer {
  /** `postgres://...` of the superuser's `postgres` database. */
  readonly url: string;
  readonly port: number;
  stop(): void;
  /**
   * The lines of the server's log that say it was in trouble (a crash of a backend, a deadlock,
   * memory, connections refused), for a failed run's report; none once it is stopped.
   */
  troubles(): string[];
  /** Stops the server the way a crash or a restart would, and starts it again after `ms`. */
  restart(downMs?: number): Promise<void>;
  /**
   * The CPU time (user, system; µs) the server's processes have used so far: the postmaster's,
   * its children's (backends, walwriter, autovacuum...) and that of the children it has reaped.
   */
  cpu(): { user: number; system: number };
}

function findBin(name: string): string {
  const dir = findPostgresBin();
  if (!dir) {
    throw new Error(
      `PostgreSQL's server binaries (${name}) are not installed: apt-get install postgresql, or set VRP_TEST_PG_BIN`,
    );
  }
  return join(dir, name);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

/** What a test server's log says when the server itself was in trouble, not a test's statement. */
const PG_TROUBLE =
  /PANIC|deadlock detected|was terminated by signal|terminating any other active server processes|out of memory|too many clients|remaining connection slots/;

/**
 * The log's trouble lines, each with what the server wrote after it about the same event: its
 * DETAIL (for a deadlock, which processes waited for which locks, over several indented lines),
 * HINT, CONTEXT and STATEMENT lines, so that a failed run's report names the statements.
 */
function troubleLines(log: string): string[] {
  const out: string[] = [];
  let pid: string | undefined;
  for (const line of log.split('\n')) {
    if (PG_TROUBLE.test(line)) {
      out.push(line);
      pid = /\[(\d+)\]/.exec(line)?.[1];
    } else if (
      pid !== undefined &&
      (line.startsWith('\t') || new RegExp(`\\[${pid}\\] (DETAIL|HINT|CONTEXT|STATEMENT):`).test(line))
    ) {
      out.push(line);
    } else pid = undefined;
  }
  return out;
}

/**
 * A throwaway PostgreSQL server. Tuned for speed (no fsync, asynchronous commit), except with
 * `durable`: then it is configured as in production (fsync, full page writes, synchronous
 * commit), a commit is acknowledged only once its WAL is on disk, and a crash of the server
 * (`restart`, an immediate stop) loses no acknowledged commit. The benchmarks measure that
 * server. With asynchronous commit the last ~0.6 s of commits may vanish in such a crash.
 */
export async function startPostgres(options: { durable?: boolean } = {}): Promise<PostgresServer> {
  const asRoot = process.getuid?.() === 0;
  const uid = asRoot ? Number(execFileSync('id', ['-u', 'postgres']).toString().trim()) : undefined;
  const gid = asRoot ? Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'vrp-pg-'));
  chmodSync(dir, 0o700);
  if (asRoot) chownSync(dir, uid!, gid!);
  const data = join(dir, 'data');
  const run = (bin: string, args: string[]) => {
    const cmd = asRoot ? 'runuser' : findBin(bin);
    const full = asRoot ? ['-u', 'postgres', '--', findBin(bin), ...args] : args;
    const r = spawnSync(cmd, full, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${bin} failed: ${r.stderr || r.stdout}`);
  };
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  const conf = [
    `port = ${port}`,
    `listen_addresses = '127.0.0.1'`,
    `unix_socket_directories = '${dir}'`,
    'max_connections = 300',
    `fsync = ${options.durable ? 'on' : 'off'}`,
    `synchronous_commit = ${options.durable ? 'on' : 'off'}`,
    `full_page_writes = ${options.durable ? 'on' : 'off'}`,
    'shared_buffers = 128MB',
  ].join('\n');
  writeFileSync(join(data, 'postgresql.auto.conf'), `${conf}\n`);
  if (asRoot) chownSync(join(data, 'postgresql.auto.conf'), uid!, gid!);
  const start = () => run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
  const stop = (mode: string) => run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
  start();
  let stopped = false;
  const server: PostgresServer = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    troubles() {
      if (stopped) return [];
      try {
        return troubleLines(readFileSync(join(dir, 'log'), 'utf8'));
      } catch {
        return [];
      }
    },
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        stop('fast');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    cpu() {
      const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      // A child that exits meanwhile is counted in the postmaster's reaped children, or not at all.
      return [
        processCpu(postmaster, true),
        ...childrenOf(postmaster).map((child) => processCpu(child)),
      ].reduce(
        (sum: { user: number; system: number }, t) => ({
          user: sum.user + (t?.user ?? 0),
          system: sum.system + (t?.system ?? 0),
        }),
        { user: 0, system: 0 },
      );
    },
    async restart(downMs = 1000) {
      stop('immediate');
      await new Promise((r) => setTimeout(r, downMs));
      start();
    },
  };
  return server;
}
