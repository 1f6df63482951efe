/**
 * A focused load on the console's and the token endpoint's request handling: what the cookie,
 * form-body and security-header parts cost. Not part of `npm run bench`; the figures are in
 * bench/FINDINGS.md. The app is built in this process (SQLite, logger off, rate limit off) and
 * listens on loopback; the load runs in its own process (bench/load.ts), 10 connections, each
 * scenario `--repeats` times. The figure is the server's CPU time per request (user+sys of this
 * process while the load runs), with req/s beside it.
 *
 *   node bench/console.ts [--duration 5] [--repeats 3]
 *
 * Scenarios: the login page (GET, no cookie: parses none, sets one, all headers); a login form
 * with a wrong form token (POST: a form body and a cookie parsed, a 403 page, no password hash);
 * the overview page of a signed-in operator (GET with the session cookie: a flash-less page that
 * calls the operator API); the token endpoint with a form body that repeats a field (400 before any
 * secret check).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createOperator } from '../src/auth/operators.ts';
import { loadConfig } from '../src/config.ts';
import { createContext } from '../src/context.ts';
import { buildApp } from '../src/http/app.ts';
import { CONSOLE } from '../src/http/base-path.ts';
import type { LoadOptions, LoadResult } from './load.ts';

const { values } = parseArgs({
  options: { duration: { type: 'string', default: '5' }, repeats: { type: 'string', default: '3' } },
});
const duration = Number(values.duration);
const repeats = Number(values.repeats);

const dataDir = mkdtempSync(join(tmpdir(), 'vrp-bench-console-'));
const config = loadConfig({
  VRP_DATA_DIR: dataDir,
  VRP_LOG_LEVEL: 'silent',
  VRP_SIMULATED_SPEED: '0',
  VRP_RATE_LIMIT: '0',
});
const ctx = await createContext(config);
const app = buildApp(ctx, { logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

const PASSWORD = 'a console password of some length';
const cost = { N: 1024, r: 8, p: 1 };
await createOperator(ctx.store.db, { name: 'bench', password: PASSWORD, passwordCost: cost }, Date.now());
const FORM = 'application/x-www-form-urlencoded';
const cookieOf = (res: Response, name: string) =>
  res.headers
    .getSetCookie()
    .map((c) => new RegExp(`^${name}=([^;]*)`).exec(c)?.[1])
    .find((v) => v !== undefined) ?? '';

const loginPage = await fetch(`${url}${CONSOLE}/login`);
const loginToken = cookieOf(loginPage, 'vrp_console_login');
const signedIn = await fetch(`${url}${CONSOLE}/login`, {
  method: 'POST',
  redirect: 'manual',
  headers: { 'content-type': FORM, cookie: `vrp_console_login=${loginToken}` },
  body: new URLSearchParams({ _csrf: loginToken, name: 'bench', password: PASSWORD }).toString(),
});
const session = cookieOf(signedIn, 'vrp_console');
if (!session) throw new Error(`login failed: ${signedIn.status}`);

const scenarios: {
  name: string;
  status: string;
  load: Omit<LoadOptions, 'url' | 'connections' | 'duration' | 'warmup'>;
}[] = [
  { name: 'GET console/login', status: '2xx', load: { method: 'GET', path: `${CONSOLE}/login` } },
  {
    name: 'POST console/login (wrong form token, 403)',
    status: '4xx',
    load: {
      method: 'POST',
      path: `${CONSOLE}/login`,
      headers: { 'content-type': FORM, cookie: `vrp_console_login=${loginToken}` },
      body: new URLSearchParams({ _csrf: 'x'.repeat(32), name: 'bench', password: 'wrong' }).toString(),
    },
  },
  {
    name: 'GET console/ (signed in)',
    status: '2xx',
    load: { method: 'GET', path: `${CONSOLE}/`, headers: { cookie: `vrp_console=${session}` } },
  },
  {
    name: 'POST oauth/token (form, a repeated field, 400)',
    status: '4xx',
    load: {
      method: 'POST',
      path: '/vps_reseller_provider/public/oauth/token',
      headers: { 'content-type': FORM },
      body: 'grant_type=client_credentials&grant_type=client_credentials&client_id=x&client_secret=y',
    },
  },
];

function runLoad(options: LoadOptions): Promise<{ result: LoadResult; cpuUs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [
      new URL('./load.ts', import.meta.url).pathname,
      JSON.stringify(options),
    ]);
    let out = '';
    let start: NodeJS.CpuUsage | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (!start && out.startsWith('measure\n')) start = process.cpuUsage();
    });
    child.stderr.pipe(process.stderr);
    child.on('error', reject);
    child.on('exit', (code) => {
      const used = process.cpuUsage(start);
      if (code !== 0 || !start) return reject(new Error(`load exited with ${code}`));
      resolve({
        result: JSON.parse(out.slice('measure\n'.length)) as LoadResult,
        cpuUs: used.user + used.system,
      });
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log('| scenario | req/s | server CPU µs/request |');
console.log('| --- | ---: | ---: |');
for (const s of scenarios) {
  const rps: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const { result, cpuUs } = await runLoad({ ...s.load, url, connections: 10, duration, warmup: 1 });
    if (result.errors > 0 || Object.keys(result.statuses).some((k) => k !== s.status))
      throw new Error(
        `${s.name}: unexpected answers ${JSON.stringify(result.statuses)} errors ${result.errors}`,
      );
    rps.push(result.rps);
    cpu.push(cpuUs / result.total);
  }
  console.log(`| ${s.name} | ${Math.round(median(rps))} | ${median(cpu).toFixed(1)} |`);
}
await app.close();
await ctx.store.close?.();
rmSync(dataDir, { recursive: true, force: true });
