/**
 * A focused load on the console's and the token endpoint's request handling: what the cookie,
 * form-body and security-header parts cost. Not part of `npm run bench`; figures in
 * bench/FINDINGS.md.
 *
 *   node bench/console.ts [--against OTHER_TREE] [--rounds 5] [--duration 2] [--only TEXT]
 *
 * The app of this tree (and, with `--against`, of OTHER_TREE: a checkout of another commit, with
 * its node_modules) is built in this process, each on its own SQLite store, logger and rate limit
 * off, listening on loopback. Each scenario's load (bench/load.ts, 10 connections, in its own
 * process) goes to one app at a time, the two in turn, `--rounds` times: on a shared machine,
 * where two runs of the same code differ by 20-50 %, noise hits both halves of a round alike.
 * The figure is the server's CPU time per request (this process's user+sys while the load runs,
 * only one app being loaded), with req/s beside it; medians over the rounds, and the median of
 * the per-round ratios (this tree / other).
 *
 * Scenarios: the login page (GET, no cookie: sets one, all headers); a login form with a wrong
 * form token (POST: a form body and a cookie parsed, a 403 page, no password hash); the overview
 * page of a signed-in operator (its session cookie; the page calls the operator API); the token
 * endpoint with a form body that repeats a field (400 before any secret check). `--only` runs
 * those whose name contains TEXT.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { LoadOptions, LoadResult } from './load.ts';
import { median } from './report.ts';

const { values } = parseArgs({
  options: {
    against: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '2' },
    only: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const duration = Number(values.duration);
const CONSOLE = '/vps_reseller_provider/console';
const FORM = 'application/x-www-form-urlencoded';
const PASSWORD = 'a console password of some length';

type Load = Omit<LoadOptions, 'url' | 'connections' | 'duration' | 'warmup'>;
interface Served {
  readonly url: string;
  readonly scenarios: { name: string; status: string; load: Load }[];
  close(): Promise<void>;
}

const cookieOf = (res: Response, name: string) =>
  res.headers
    .getSetCookie()
    .map((c) => new RegExp(`^${name}=([^;]*)`).exec(c)?.[1])
    .find((v) => v !== undefined) ?? '';

async function serve(tree: string): Promise<Served> {
  const at = (path: string) => import(join(resolve(tree), path));
  const { loadConfig } = await at('src/config.ts');
  const { createContext } = await at('src/context.ts');
  const { buildApp } = await at('src/http/app.ts');
  const { createOperator } = await at('src/auth/operators.ts');
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-bench-console-'));
  const config = loadConfig({ VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'silent', VRP_RATE_LIMIT: '0' });
  const ctx = await createContext(config);
  const app = buildApp(ctx, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  // A cheap password hash: the scenarios never check one, the sign-in below does once.
  const cost = { N: 1024, r: 8, p: 1 };
  await createOperator(ctx.store.db, { name: 'bench', password: PASSWORD, passwordCost: cost }, Date.now());
  const token = cookieOf(await fetch(`${url}${CONSOLE}/login`), 'vrp_console_login');
  const signedIn = await fetch(`${url}${CONSOLE}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': FORM, cookie: `vrp_console_login=${token}` },
    body: new URLSearchParams({ _csrf: token, name: 'bench', password: PASSWORD }).toString(),
  });
  const session = cookieOf(signedIn, 'vrp_console');
  if (!session) throw new Error(`${tree}: sign-in failed (${signedIn.status})`);
  return {
    url,
    async close() {
      await app.close();
      await ctx.store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
    scenarios: [
      { name: 'GET console/login', status: '2xx', load: { method: 'GET', path: `${CONSOLE}/login` } },
      {
        name: 'POST console/login (wrong form token, 403)',
        status: '4xx',
        load: {
          method: 'POST',
          path: `${CONSOLE}/login`,
          headers: { 'content-type': FORM, cookie: `vrp_console_login=${token}` },
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
    ],
  };
}

/** One load run against `url`: its result and this process's CPU time while it was measured. */
function runLoad(options: LoadOptions): Promise<{ result: LoadResult; cpuUs: number }> {
  return new Promise((done, fail) => {
    const loader = new URL('./load.ts', import.meta.url).pathname;
    const child = spawn(process.execPath, [loader, JSON.stringify(options)]);
    let out = '';
    let start: NodeJS.CpuUsage | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (!start && out.startsWith('measure\n')) start = process.cpuUsage();
    });
    child.stderr.pipe(process.stderr);
    child.on('error', fail);
    child.on('exit', (code) => {
      const used = process.cpuUsage(start);
      if (code !== 0 || !start) return fail(new Error(`the load exited with ${code}`));
      done({
        result: JSON.parse(out.slice('measure\n'.length)) as LoadResult,
        cpuUs: used.user + used.system,
      });
    });
  });
}

async function measure(served: Served, i: number, warmup: number) {
  const s = served.scenarios[i]!;
  const { result, cpuUs } = await runLoad({ ...s.load, url: served.url, connections: 10, duration, warmup });
  if (result.errors > 0 || Object.keys(result.statuses).some((k) => k !== s.status))
    throw new Error(
      `${s.name}: unexpected answers ${JSON.stringify(result.statuses)}, ${result.errors} errors`,
    );
  return { rps: result.rps, cpu: cpuUs / result.total };
}

const mine = await serve('.');
const other = values.against ? await serve(values.against) : undefined;
console.log(
  other
    ? `| scenario | other: req/s, CPU µs/req | this: req/s, CPU µs/req | CPU this/other (median of ${rounds}) |\n| --- | ---: | ---: | ---: |`
    : '| scenario | req/s | server CPU µs/request |\n| --- | ---: | ---: |',
);
for (let i = 0; i < mine.scenarios.length; i++) {
  if (values.only && !mine.scenarios[i]!.name.includes(values.only)) continue;
  const a: { rps: number; cpu: number }[] = [];
  const b: { rps: number; cpu: number }[] = [];
  for (let r = 0; r < rounds; r++) {
    // The first round warms each app up (1 s unmeasured); the two alternate which goes first.
    const warmup = r === 0 ? 1 : 0;
    if (other && r % 2 === 1) b.push(await measure(other, i, warmup));
    a.push(await measure(mine, i, warmup));
    if (other && r % 2 === 0) b.push(await measure(other, i, warmup));
  }
  const cell = (xs: { rps: number; cpu: number }[]) =>
    `${Math.round(median(xs.map((x) => x.rps)))}, ${median(xs.map((x) => x.cpu)).toFixed(1)}`;
  const name = mine.scenarios[i]!.name;
  if (!other) console.log(`| ${name} | ${cell(a).replace(', ', ' | ')} |`);
  else {
    const ratio = median(a.map((x, r) => x.cpu / b[r]!.cpu)).toFixed(2);
    console.log(`| ${name} | ${cell(b)} | ${cell(a)} | ${ratio} |`);
  }
}
await mine.close();
await other?.close();
