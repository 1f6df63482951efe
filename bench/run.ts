/**
 * `npm run bench [-- --quick]`: the real server (SQLite, simulated driver at speed 0, a fresh
 * data dir) against a bare Fastify floor, loaded by autocannon from separate processes, runs
 * alternating and repeated; medians and ratios go to bench/RESULTS.md. See bench/README.md.
 */
import { execFileSync, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ensureReseller, registerApplication } from '../src/auth/applications.ts';
import { openStore } from '../src/store/database.ts';
import { DEMO_CATALOG, seedDemoCatalog } from '../src/store/demo-catalog.ts';
import { type ServerProcess, startServer } from '../test/helpers/server-process.ts';

const quick = process.argv.includes('--quick');
const DURATION = quick ? 3 : 8;
const REPEATS = quick ? 2 : 3;
const CONNECTIONS = 10;
const BIG = quick ? 100_000 : 1_000_000;
const API = '/vps_reseller_provider/public/api/v2';
const here = new URL('.', import.meta.url).pathname;

interface Load {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

function load(opts: Record<string, unknown>): Load {
  const out = execFileSync(
    process.execPath,
    [join(here, 'load.ts'), JSON.stringify({ connections: CONNECTIONS, duration: DURATION, ...opts })],
    {
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    },
  );
  return JSON.parse(out) as Load;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function startFloor(): Promise<{ url: string; stop(): void }> {
  const child = fork(join(here, 'floor.ts'), ['0'], { stdio: 'ignore' });
  const port = await new Promise<number>((resolve) =>
    child.once('message', (m) => resolve((m as { port: number }).port)),
  );
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
}

/** Inserts `n` running services of one reseller straight into the SQLite file (fast seeding). */
function seedServices(file: string, resellerId: string, clientId: string, n: number): string[] {
  const db = new DatabaseSync(file);
  db.exec('pragma journal_mode = wal; pragma synchronous = off');
  const p = DEMO_CATALOG.products[0]!;
  const stmt = db.prepare(
    `insert into services (id, reseller_id, client_id, product_id, template_id, domain_name, username, password_enc,
      cpu, ram, hdd, ip_count, backup, status, resume_status, suspend_reason, projected_status, projected_resume,
      pending_jobs, job_seq, active_job_id, host_id, ips, disk_revision, created_at, updated_at, terminated_at)
     values (?, ?, ?, ?, ?, 'bench.example.com', 'root', 'v1.x.x.x', 1, 1, 20, 1, 10, 'running', null, null, 'running', null,
      0, 1, null, 'sim-host-1', '["10.80.0.2"]', 1, ?, ?, null)`,
  );
  const sample: string[] = [];
  const now = Date.now();
  db.exec('begin');
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    stmt.run(id, resellerId, clientId, p.id, p.os_templates[0]!, now + i, now + i);
    if (i % Math.max(1, Math.floor(n / 1000)) === 0) sample.push(id);
  }
  db.exec('commit');
  db.close();
  return sample;
}

function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-bench-'));
  const env = {
    VRP_DATA_DIR: dataDir,
    VRP_SIMULATED_SPEED: '0',
    VRP_RATE_LIMIT: '0',
    VRP_LOG_LEVEL: 'warn',
    VRP_WORKER_CONCURRENCY: '32',
  };
  const store = await openStore({ databaseUrl: undefined, dataDir });
  await seedDemoCatalog(store.db, Date.now());
  const reseller = await ensureReseller(store.db, 'bench', Date.now());
  const app = await registerApplication(store.db, { reseller: 'bench' }, Date.now());
  await store.close();
  const sample = seedServices(join(dataDir, 'vrp.sqlite'), reseller.id, app.client_id, 1000);
  const idsFile = join(dataDir, 'ids.txt');
  writeFileSync(idsFile, sample.join('\n'));

  const floor = await startFloor();
  let server: ServerProcess = await startServer(env);
  const results: {
    name: string;
    server: number;
    floor: number;
    ratio: number;
    target?: string;
    ok?: boolean;
    note?: string;
  }[] = [];
  try {
    const tokenBody = JSON.stringify({
      grant_type: 'client_credentials',
      client_id: app.client_id,
      client_secret: app.client_secret,
    });
    const token = (
      (await (
        await fetch(`${server.url}/vps_reseller_provider/public/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: tokenBody,
        })
      ).json()) as { access_token: string }
    ).access_token;
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const p = DEMO_CATALOG.products[0]!;
    const orderBody = JSON.stringify({
      product_id: p.id,
      domain_name: 'b.example.com',
      template_id: p.os_templates[0],
      cpu: 1,
      ram: 1,
      hdd: 20,
      ip: 1,
      backup: 10,
    });

    const scenario = (name: string, req: Record<string, unknown>, target?: number) => {
      const s: number[] = [];
      const f: number[] = [];
      for (let r = 0; r < REPEATS; r++) {
        const a = load({ ...req, url: server.url + (req['path'] ?? '') });
        const b = load({ ...req, url: floor.url + (req['path'] ?? ''), idsFile: undefined });
        if (a.non2xx || a.errors)
          throw new Error(`${name}: ${a.non2xx} non-2xx and ${a.errors} errors: the run is invalid`);
        s.push(a.rps);
        f.push(b.rps);
      }
      const row = { name, server: median(s), floor: median(f), ratio: median(s) / median(f) };
      results.push({ ...row, ...(target ? { target: `>= ${target}`, ok: row.ratio >= target } : {}) });
      console.log(
        `${name}: ${row.server.toFixed(0)} req/s, floor ${row.floor.toFixed(0)}, ratio ${row.ratio.toFixed(2)}`,
      );
      return row;
    };

    scenario('token issue (POST oauth/token)', {
      method: 'POST',
      path: '/vps_reseller_provider/public/oauth/token',
      headers: { 'content-type': 'application/json' },
      body: tokenBody,
    });
    scenario('GET version', { method: 'GET', path: `${API}/version`, headers: auth }, 0.6);
    scenario('GET products', { method: 'GET', path: `${API}/products`, headers: auth });
    const status1k = scenario(
      'GET status, 1,000 services',
      {
        method: 'GET',
        path: `${API}/service/${sample[0]}/status`,
        pathTemplate: `${API}/service/{id}/status`,
        idsFile,
        headers: auth,
      },
      0.5,
    );
    const rss1k = peakRss(server.child.pid!);
    scenario(
      'POST create-order',
      { method: 'POST', path: `${API}/service/create-order`, headers: auth, body: orderBody },
      0.3,
    );

    // Order -> create -> running at speed 0: services per second reaching running.
    const K = quick ? 500 : 2000;
    const t0 = performance.now();
    let next = 0;
    const workers = Array.from({ length: 32 }, async () => {
      while (next < K) {
        next++;
        const o = await fetch(`${server.url}${API}/service/create-order`, {
          method: 'POST',
          headers: auth,
          body: orderBody,
        });
        const id = ((await o.json()) as { data: { service_id: string }[] }).data[0]!.service_id;
        await (
          await fetch(`${server.url}${API}/service/${id}/create`, { method: 'POST', headers: auth, body: '' })
        ).arrayBuffer();
      }
    });
    await Promise.all(workers);
    const probe = new DatabaseSync(join(dataDir, 'vrp.sqlite'), { readOnly: true });
    for (;;) {
      const row = probe
        .prepare(`select count(*) as n from jobs where action = 'create' and status = 'succeeded'`)
        .get() as { n: number };
      if (row.n >= K) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    probe.close();
    const perSecond = K / ((performance.now() - t0) / 1000);
    results.push({
      name: `order -> create -> running (${K} services, speed 0)`,
      server: perSecond,
      floor: Number.NaN,
      ratio: Number.NaN,
      target: '>= 1000 services/s',
      ok: perSecond >= 1000,
    });
    console.log(`order -> running: ${perSecond.toFixed(0)} services/s`);

    // The status scenario with BIG services stored: seeded while the server is stopped.
    await server.stop();
    seedServices(join(dataDir, 'vrp.sqlite'), reseller.id, app.client_id, BIG - 1000 - K);
    server = await startServer(env);
    const statusBig = scenario(`GET status, ${BIG.toLocaleString('en')} services`, {
      method: 'GET',
      path: `${API}/service/${sample[0]}/status`,
      pathTemplate: `${API}/service/{id}/status`,
      idsFile,
      headers: auth,
    });
    const slowdown = status1k.server / statusBig.server;
    results.push({
      name: `status slowdown, ${BIG.toLocaleString('en')} vs 1,000 services`,
      server: slowdown,
      floor: Number.NaN,
      ratio: Number.NaN,
      target: '<= 1.2x',
      ok: slowdown <= 1.2,
    });
    const rss = Math.max(rss1k, peakRss(server.child.pid!));
    results.push({
      name: 'server peak RSS under the status load',
      server: rss / 2 ** 20,
      floor: Number.NaN,
      ratio: Number.NaN,
      target: '<= 200 MB',
      ok: rss / 2 ** 20 <= 200,
    });
  } finally {
    await server.kill();
    floor.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }

  const cpu = cpus()[0]?.model ?? 'unknown';
  const fmt = (n: number) => (Number.isNaN(n) ? '—' : n >= 100 ? n.toFixed(0) : n.toFixed(2));
  const md = [
    '# Benchmark results',
    '',
    `Written by \`npm run bench${quick ? ' -- --quick' : ''}\` on ${new Date().toISOString().slice(0, 10)}.`,
    `Machine: ${cpus().length} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; client and server share the machine.`,
    `Each scenario: ${CONNECTIONS} connections, ${DURATION} s per run, ${REPEATS} runs of the server alternating with the floor (a bare Fastify app answering a constant envelope); medians.`,
    quick ? `Quick mode: ${BIG.toLocaleString('en')} services instead of 1,000,000 for the large store.` : '',
    '',
    '| scenario | server | floor | ratio | target | holds |',
    '|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.name} | ${fmt(r.server)} | ${fmt(r.floor)} | ${fmt(r.ratio)} | ${r.target ?? '—'} | ${r.ok === undefined ? '—' : r.ok ? 'yes' : '**no**'} |`,
    ),
    '',
    'Figures are requests per second unless the row says otherwise (services/s, a slowdown factor, MB).',
    '',
  ].join('\n');
  const notes = join(here, 'NOTES.md');
  let extra = '';
  try {
    extra = readFileSync(notes, 'utf8');
  } catch {
    // no findings recorded
  }
  writeFileSync(join(here, 'RESULTS.md'), md + (extra ? `\n${extra}` : ''));
  console.log(md);
}

await main();
