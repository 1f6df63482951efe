/**
 * A throwaway PowerDNS Authoritative server for the reverse DNS tests: Debian's `pdns_server`
 * run by the test as a child process (no daemon, no guardian, a config directory of its own),
 * answering DNS on 127.0.0.1 and a free port, its webserver and HTTP API on another, with an
 * API key, and a fresh SQLite database made from the schema `pdns-backend-sqlite3` ships.
 * Nothing of the machine's own PowerDNS set-up is read or changed. `dig` asks it questions.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Kysely } from 'kysely';
import { freePort } from '../../scripts/postgres.ts';
import type { JobAction } from '../../src/domain/status-machine.ts';
import type { Database } from '../../src/store/schema.ts';
import { pause, WAIT_MS, waitUntil } from './budget.ts';
import { toolPath } from './tools.ts';

/** Where Debian's pdns-backend-sqlite3 puts its schema (the first that exists). */
const SCHEMAS = [
  '/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql',
  '/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql',
];

export interface PowerDns {
  /** The DNS port on 127.0.0.1. */
  readonly dnsPort: number;
  /** The webserver's root (`http://127.0.0.1:PORT`): what VRP_PDNS_API_URL names. */
  readonly apiUrl: string;
  readonly apiKey: string;
  /** The settings that point the product at this server. */
  readonly env: Readonly<Record<string, string>>;
  /** `dig @127.0.0.1 -p PORT -x ip +short`: the PTR names it answers, without the final dot. */
  ptrOf(ip: string): string[];
  /**
   * Asks `dig -x` up to `tries` times, `everyMs` apart, until the answer is `expected` (a name,
   * or none); returns the last answer. A bound on tries, not on time: it fails on what it saw.
   */
  digUntil(
    ip: string,
    expected: string | null,
    options?: { tries?: number; everyMs?: number },
  ): Promise<string[]>;
  /** Stops the server (its data stays); `start` runs it again on the same ports. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

export async function startPowerDns(): Promise<PowerDns> {
  const pdnsServer = toolPath('pdns');
  const schema = SCHEMAS.find((p) => existsSync(p));
  if (!schema)
    throw new Error(
      `no PowerDNS SQLite schema at ${SCHEMAS.join(' or ')} (apt-get install pdns-backend-sqlite3)`,
    );
  const dir = mkdtempSync(join(tmpdir(), 'vrp-pdns-'));
  const database = join(dir, 'pdns.sqlite3');
  const db = new DatabaseSync(database);
  db.exec(readFileSync(schema, 'utf8'));
  db.close();
  const dnsPort = await freePort();
  const apiPort = await freePort();
  const apiKey = randomBytes(16).toString('hex');
  writeFileSync(
    join(dir, 'pdns.conf'),
    [
      'launch=gsqlite3',
      `gsqlite3-database=${database}`,
      'local-address=127.0.0.1',
      `local-port=${dnsPort}`,
      'webserver=yes',
      'webserver-address=127.0.0.1',
      `webserver-port=${apiPort}`,
      'webserver-allow-from=127.0.0.0/8',
      'api=yes',
      `api-key=${apiKey}`,
      'daemon=no',
      'guardian=no',
      `socket-dir=${dir}`,
      'disable-syslog=yes',
      'log-timestamp=no',
      'loglevel=4',
      '',
    ].join('\n'),
  );
  const apiUrl = `http://127.0.0.1:${apiPort}`;

  let child: ChildProcess | undefined;
  let log = '';
  const start = async (): Promise<void> => {
    const proc = spawn(pdnsServer, [`--config-dir=${dir}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout?.setEncoding('utf8').on('data', (d: string) => (log += d));
    proc.stderr?.setEncoding('utf8').on('data', (d: string) => (log += d));
    let exited: string | undefined;
    proc.once('exit', (code, signal) => (exited = `pdns_server exited (${code ?? signal}):\n${log}`));
    await waitUntil(`pdns_server's API on ${apiUrl}`, async () => {
      if (exited) throw new Error(exited);
      try {
        const res = await fetch(`${apiUrl}/api/v1/servers/localhost`, { headers: { 'X-API-Key': apiKey } });
        return res.ok;
      } catch {
        return false;
      }
    });
  };
  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  };
  const ptrOf = (ip: string): string[] => {
    const r = spawnSync(
      toolPath('dig'),
      ['@127.0.0.1', '-p', String(dnsPort), '-x', ip, '+short', '+time=2', '+tries=1'],
      { encoding: 'utf8', timeout: WAIT_MS },
    );
    if (r.status !== 0) throw new Error(`dig -x ${ip} failed (${r.status}): ${r.stderr || r.stdout}`);
    return r.stdout
      .split('\n')
      .map((l) => l.trim().replace(/\.$/, ''))
      .filter((l) => l !== '' && !l.startsWith(';'));
  };
  await start();
  return {
    dnsPort,
    apiUrl,
    apiKey,
    env: { VRP_PDNS_API_URL: apiUrl, VRP_PDNS_API_KEY: apiKey },
    ptrOf,
    async digUntil(ip, expected, options = {}) {
      const tries = options.tries ?? 10;
      let answer: string[] = [];
      for (let i = 0; i < tries; i++) {
        answer = ptrOf(ip);
        if (expected === null ? answer.length === 0 : answer.length === 1 && answer[0] === expected)
          return answer;
        await pause(options.everyMs ?? 500);
      }
      return answer;
    },
    stop,
    start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A stand-in for PowerDNS' HTTP API where a test needs the reverse DNS routes to answer but not
 * a DNS server (the check of every route's answers against the document): it takes every zone
 * and rrset change (201, 204) and keeps nothing. It answers what it was asked, with `requests`.
 */
export async function startPowerDnsApiStub(): Promise<{
  readonly url: string;
  readonly env: Readonly<Record<string, string>>;
  readonly requests: string[];
  close(): Promise<void>;
}> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push(`${req.method} ${req.url}`);
      res.writeHead(req.method === 'POST' ? 201 : 204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    env: { VRP_PDNS_API_URL: url, VRP_PDNS_API_KEY: 'stub-key' },
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * Between the product and PowerDNS: passes every request on, or, while `failing`, answers 500
 * itself (a DNS API that breaks), so one app sees both; with PowerDNS stopped it drops the
 * connection, as a server that is not there does.
 */
export async function startApiProxy(
  target: string,
): Promise<{ url: string; failing: boolean; close(): Promise<void> }> {
  const state = { failing: false };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (state.failing) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'Backend error: database is locked' }));
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && k !== 'host') headers[k] = v;
    const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
    let answer: Response;
    try {
      answer = await fetch(`${target}${req.url}`, { method: req.method, headers, body });
    } catch {
      // PowerDNS is down: so is the way to it, as the product sees it.
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    get failing() {
      return state.failing;
    },
    set failing(v: boolean) {
      state.failing = v;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * Waits until the service's `action` job has met a DNS API that failed on its PTR records and
 * been queued again (a second attempt, its error naming the PTRs), never failed.
 */
export async function waitForPtrRetry(
  db: Kysely<Database>,
  serviceId: string,
  action: JobAction,
): Promise<void> {
  await waitUntil(`the ${action} job to retry after the DNS API failed`, async () => {
    const job = await db
      .selectFrom('jobs')
      .select(['attempts', 'status', 'error'])
      .where('service_id', '=', serviceId)
      .where('action', '=', action)
      .executeTakeFirstOrThrow();
    assert.notEqual(job.status, 'failed', JSON.stringify(job));
    return job.attempts >= 2 && /PTR/.test(job.error ?? '');
  });
}
