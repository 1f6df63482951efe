/**
 * `npm run bench [-- --quick] [-- --only a,b] [-- --profile DIR]`: the real server (SQLite,
 * simulated hypervisor at speed 0, a fresh data dir) against a floor (a bare Fastify app
 * answering a constant envelope), both loaded by autocannon from a separate process, runs
 * alternating server/floor and repeated; medians, ratios to the floor and the targets go to
 * bench/RESULTS.md. See bench/README.md.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { machineIdle, processCpu } from '../scripts/processes.ts';
import { ensureReseller, registerApplication } from '../src/auth/applications.ts';
import { createOperator } from '../src/auth/operators.ts';
import { openStore } from '../src/store/database.ts';
import { DEMO_CATALOG, seedDemoCatalog } from '../src/store/demo-catalog.ts';
import {
  SERVER_ENV,
  SERVER_NODE_FLAGS,
  type ServerProcess,
  serverProgram,
  startServer,
} from '../test/helpers/server-process.ts';
import { APP_FLOOR_PATH, type FloorLayer, type FloorReady } from './floor.ts';
import { benchClient } from './http-client.ts';
import {
  libvirtProvisioning,
  type ProvisioningRun,
  provisioningSection,
  writeProvisioningSection,
} from './libvirt.ts';
import type { LoadOptions, LoadResult } from './load.ts';
import { type MachineShare, machineLine, median, type Row, writeResults } from './report.ts';
import { sectionsOf, writeSection } from './sections.ts';
import { resetIds, sealedBenchPassword } from './seed.ts';
import { type BenchStore, benchStores, type StoreKind } from './stores.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
process.chdir(root); // the server runs `dist/main.js` relative to the working directory

/** The server as the launchers run it: the build of src/ (made now if it is not current). */
const startBuilt = (env: Record<string, string>) => startServer(env, undefined, undefined, serverProgram());

const ALL = [
  'token',
  'version',
  'products',
  'status',
  'details',
  'order',
  'running',
  'status-big',
  'ops-lists',
  'libvirt',
  'ladder',
] as const;
type Key = (typeof ALL)[number];
const USAGE = `usage: npm run bench [-- OPTIONS]   (bench/README.md)
  --quick               3 s runs, 2 repeats, 100,000 services (the full run: 5 s, 3, 1,000,000)
  --only KEYS           comma-separated scenarios (RESULTS.md is written only when all run):
                        ${ALL.join(', ')}
  --store STORE         sqlite, postgres or both (default)
  --connections LIST    the connection counts of the request scenarios (default 10,50)
  --profile DIR         the server's CPU profiles (node --cpu-prof) into DIR
  --heap-profile DIR    where the server allocates, sampled (heap-sampling.ts), into DIR
  --sql-timings DIR     every SQLite statement of the server timed into DIR
  --libvirt-template D  the tiny test template of the real-VM scenario
  --cold                order -> running without its warm-up round (as the bench measured it
                        until 2026-12-01)
  --help                this text`;

/** A mistake in the command line: one line and the usage, no stack; exit status 2. */
function usageError(message: string): never {
  console.error(`bench: ${message}\n${USAGE}`);
  process.exit(2);
}

const parsed = (() => {
  try {
    return parseArgs({
      options: {
        help: { type: 'boolean', default: false },
        quick: { type: 'boolean', default: false },
        /** Comma-separated scenario keys; RESULTS.md is written only when all of them run. */
        only: { type: 'string' },
        /** Run the server with --cpu-prof into this directory (one profile per server process). */
        profile: { type: 'string' },
        /** Sample the server's allocations into this directory (heap-sampling.ts). */
        'heap-profile': { type: 'string' },
        /** Time every SQLite statement of the server (sql-timings.ts) into this directory. */
        'sql-timings': { type: 'string' },
        /** The tiny test template for the real-VM scenario (default: VRP_TEST_LIBVIRT_TEMPLATE). */
        'libvirt-template': { type: 'string' },
        /** sqlite, postgres or both (default): the stores every scenario runs on, in that order. */
        store: { type: 'string', default: 'both' },
        /** The connection counts every request scenario runs at (default 10,50). */
        connections: { type: 'string', default: '10,50' },
        /** order -> running measured on the server's first round, with no warm-up round before it. */
        cold: { type: 'boolean', default: false },
      },
    });
  } catch (err) {
    return usageError(err instanceof Error ? err.message : String(err));
  }
})();
const args = parsed.values;
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const libvirtTemplate = args['libvirt-template'] || process.env['VRP_TEST_LIBVIRT_TEMPLATE'] || undefined;
const quick = args.quick!;
const STORES: StoreKind[] =
  args.store === 'both'
    ? ['sqlite', 'postgres']
    : args.store === 'sqlite' || args.store === 'postgres'
      ? [args.store]
      : [];
if (STORES.length === 0) usageError(`--store is sqlite, postgres or both, not ${args.store}`);
const CONNECTIONS = args.connections!.split(',').map(Number);
if (CONNECTIONS.some((c) => !Number.isInteger(c) || c < 1))
  usageError(`--connections is a list of whole numbers of at least 1, not ${args.connections}`);
const SETTINGS = {
  connections: CONNECTIONS,
  duration: quick ? 3 : 5,
  warmup: quick ? 0.5 : 1,
  repeats: quick ? 2 : 3,
  bigStore: quick ? 100_000 : 1_000_000,
  smallStore: 1000,
  /** Services driven order -> create -> running, and how many at once. */
  pipeline: quick ? 500 : 2000,
  pipelineConcurrency: 32,
};
const only = args.only ? new Set(args.only.split(',')) : undefined;
for (const k of only ?? []) if (!(ALL as readonly string[]).includes(k)) usageError(`unknown scenario ${k}`);
const enabled = (k: Key) => !only || only.has(k);

const BASE = '/vps_reseller_provider/public';
const API = `${BASE}/api/v2`;
const OPS = '/vps_reseller_provider/operator/v1';

// ---- child processes: every one is tracked, and killed at the end or on an interruption ----
const children = new Set<ChildProcess>();
const track = (c: ChildProcess) => {
  children.add(c);
  c.once('exit', () => children.delete(c));
  return c;
};
let dataDir: string | undefined;
function cleanup() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    console.error(`bench: ${sig}: stopping`);
    cleanup();
    process.exit(130);
  });
}

// ---- helpers ----
/** CPU time (user, system) of a process so far, in µs; NaN if it is gone. */
function cpuTime(pid: number): { user: number; system: number } {
  return processCpu(pid) ?? { user: Number.NaN, system: Number.NaN };
}

export interface Measured extends LoadResult {
  /** CPU time of the loaded process per answered request over the measured run, µs. */
  readonly cpuUserUs: number;
  readonly cpuSystemUs: number;
  /** Peak VmRSS of the loaded process during the run, bytes. */
  readonly rssPeak: number;
  /** The load generator's CPU time per answered request (user + system), µs. */
  readonly loadCpuUs: number;
  /** The database's processes' CPU time per answered request (user + system), µs; NaN without one. */
  readonly databaseCpuUs: number;
  /** The cores the machine left idle over the measured run, on average. */
  readonly idleCores: number;
}

/** CPU time so far (user, system; µs); undefined if unknown. */
type CpuClock = () => { user: number; system: number } | undefined;

/**
 * One load process against `opts.url`; `pid` is the process answering, whose CPU time over the
 * measured part and peak resident set are sampled, with the machine's idle time over the same
 * part and, given `databaseCpu`, the CPU time of the database's processes.
 */
function runLoad(opts: LoadOptions, pid: number, databaseCpu?: CpuClock): Promise<Measured> {
  return new Promise((resolvePromise, reject) => {
    const child = track(
      spawn(process.execPath, [join(here, 'load.ts'), JSON.stringify(opts)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    const stopRss = sampleRss(pid);
    const mark = () => ({
      at: performance.now(),
      cpu: cpuTime(pid),
      idle: machineIdle() ?? Number.NaN,
      database: sum(databaseCpu?.()),
    });
    let m0 = mark();
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => {
      const before = out;
      out += d;
      if (!before.includes('measure\n') && out.includes('measure\n')) m0 = mark();
    });
    child.stderr!.on('data', (d) => {
      err += d;
    });
    child.once('exit', (code) => {
      const m1 = mark();
      const rssPeak = stopRss();
      if (code !== 0) {
        reject(new Error(`load process exited with ${code}: ${err}`));
        return;
      }
      const r = JSON.parse(out.slice(out.indexOf('measure\n') + 'measure\n'.length)) as LoadResult;
      const perRequest = (us: number) => us / Math.max(1, r.total);
      resolvePromise({
        ...r,
        cpuUserUs: perRequest(m1.cpu.user - m0.cpu.user),
        cpuSystemUs: perRequest(m1.cpu.system - m0.cpu.system),
        rssPeak,
        loadCpuUs: perRequest(r.ownCpuUs),
        databaseCpuUs: perRequest(m1.database - m0.database),
        idleCores: (m1.idle - m0.idle) / ((m1.at - m0.at) * 1000),
      });
    });
  });
}

const sum = (t: { user: number; system: number } | undefined) => (t ? t.user + t.system : Number.NaN);

function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Samples the process's resident set every 100 ms until stopped; returns the peak (bytes). */
function sampleRss(pid: number): () => number {
  let peak = procStatus(pid, 'VmRSS');
  const timer = setInterval(() => {
    peak = Math.max(peak, procStatus(pid, 'VmRSS'));
  }, 100);
  return () => {
    clearInterval(timer);
    return Math.max(peak, procStatus(pid, 'VmRSS'));
  };
}

type Req = Omit<LoadOptions, 'url' | 'connections' | 'duration' | 'warmup'>;
interface Loaded {
  readonly url: string;
  readonly child: ChildProcess;
}

/**
 * The same load against `server` and `floor` in turn, `SETTINGS.repeats` times each; the row of
 * their medians, the ratio and CPU per request (invalid if any run answered non-2xx or failed),
 * printed as it is made. `judge` gives the target and whether the ratio meets it.
 */
async function againstFloor(
  head: Pick<Row, 'key' | 'store' | 'connections' | 'name'>,
  req: Req,
  server: Loaded,
  floor: Loaded,
  judge?: (ratio: number) => Pick<Row, 'target' | 'ok'>,
  databaseCpu?: CpuClock,
): Promise<Row> {
  const server_: Measured[] = [];
  const floor_: Measured[] = [];
  const base = {
    connections: head.connections!,
    duration: SETTINGS.duration,
    warmup: SETTINGS.warmup,
    ...req,
  };
  for (let r = 0; r < SETTINGS.repeats; r++) {
    server_.push(await runLoad({ ...base, url: server.url }, server.child.pid!, databaseCpu));
    floor_.push(await runLoad({ ...base, url: floor.url }, floor.child.pid!));
  }
  const bad = [...server_.map((x) => ['server', x] as const), ...floor_.map((x) => ['floor', x] as const)]
    .filter(([, x]) => x.non2xx > 0 || x.errors > 0 || x.timeouts > 0)
    .map(
      ([who, x]) =>
        `${who}: ${x.non2xx} non-2xx ${JSON.stringify(x.statuses)}, ${x.errors} errors, ${x.timeouts} timeouts`,
    );
  const sv = median(server_.map((x) => x.rps));
  const f = median(floor_.map((x) => x.rps));
  const cpu = (xs: Measured[]) => [median(xs.map((x) => x.cpuUserUs)), median(xs.map((x) => x.cpuSystemUs))];
  const share = (xs: Measured[]): MachineShare => ({
    loadUs: median(xs.map((x) => x.loadCpuUs)),
    databaseUs: median(xs.map((x) => x.databaseCpuUs)),
    idleCores: median(xs.map((x) => x.idleCores)),
  });
  const row: Row = {
    ...head,
    unit: 'req/s',
    server: sv,
    floor: f,
    ratio: sv / f,
    runs: { server: server_.map((x) => x.rps), floor: floor_.map((x) => x.rps) },
    p50: median(server_.map((x) => x.p50)),
    p99: median(server_.map((x) => x.p99)),
    rssMb: Math.max(...server_.map((x) => x.rssPeak)) / 2 ** 20,
    cpuUs: { server: cpu(server_), floor: cpu(floor_) },
    machine: { server: share(server_), floor: share(floor_) },
    ...judge?.(sv / f),
    ...(bad.length > 0 ? { invalid: bad.join('; '), ok: false } : {}),
  };
  console.log(
    `${row.name}: ${sv.toFixed(0)} req/s (runs ${server_.map((x) => x.rps.toFixed(0)).join(', ')}), ` +
      `floor ${f.toFixed(0)} (runs ${floor_.map((x) => x.rps.toFixed(0)).join(', ')}), ratio ${row.ratio!.toFixed(3)}, ` +
      `p50/p99 ${row.p50} / ${row.p99} ms, RSS ${row.rssMb!.toFixed(0)} MB, ` +
      `CPU µs/request user+sys: server ${row.cpuUs!.server.map((x) => x.toFixed(0)).join('+')}, floor ${row.cpuUs!.floor.map((x) => x.toFixed(0)).join('+')}; ` +
      `the load generator's ${machineLine(row.machine!)}` +
      `${row.invalid ? `  INVALID: ${row.invalid}` : ''}`,
  );
  return row;
}

/** Resolves once a worker process listens for queued jobs on PostgreSQL (pg_stat_activity shows its LISTEN). */
async function workerListening(store: BenchStore, worker: ChildProcess): Promise<void> {
  for (;;) {
    if (worker.exitCode !== null)
      throw new Error(`the worker process exited (${worker.exitCode}) before it was ready`);
    const [row] = await store.rows<{ n: number | string }>(
      "select count(*) as n from pg_stat_activity where datname = current_database() and query = 'listen vrp_jobs'",
    );
    if (Number(row?.n) > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The server's NODE_OPTIONS for `--profile`, `--heap-profile` and `--sql-timings`, with the directory each writes to. */
function serverNodeOptions(): Record<string, string> {
  const options = [
    ...(args.profile ? [`--cpu-prof --cpu-prof-dir=${resolve(args.profile)}`] : []),
    ...(args['heap-profile'] ? [`--import ${join(here, 'heap-sampling.ts')}`] : []),
    ...(args['sql-timings'] ? [`--import ${join(here, 'sql-timings.ts')}`] : []),
  ];
  return {
    ...(options.length > 0 ? { NODE_OPTIONS: options.join(' ') } : {}),
    ...(args['sql-timings'] ? { VRP_BENCH_SQL_TIMINGS: resolve(args['sql-timings']) } : {}),
    ...(args['heap-profile'] ? { VRP_BENCH_HEAP_PROFILE: resolve(args['heap-profile']) } : {}),
  };
}

/** The floor, bare or with some of a production server's layers, or the project's app (floor.ts). */
async function startFloor(
  layers: readonly FloorLayer[] = [],
): Promise<{ url: string; child: ChildProcess; token?: string }> {
  const child = track(
    fork(
      join(here, 'floor.ts'),
      [
        layers.join(','),
        ...(layers.includes('app') || layers.includes('app-info') ? [join(dataDir!, 'ladder-app')] : []),
      ],
      {
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      },
    ),
  );
  const ready = await new Promise<FloorReady>((res, rej) => {
    child.once('message', (m) => res(m as FloorReady));
    child.once('exit', (code) => rej(new Error(`floor exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${ready.port}`,
    child,
    ...(ready.token !== undefined && { token: ready.token }),
  };
}

async function stopServer(server: ServerProcess): Promise<void> {
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 30_000);
  await server.stop();
  clearTimeout(timer);
}

// ---- the bench ----
/**
 * The speed targets (bench/README.md; the speed round's), as ratios to the floor at every connection
 * count. PostgreSQL's are SQLite's ratio in the same run less 0.1.
 */
const TARGETS: Partial<Record<Key, number>> = {
  token: 0.25,
  version: 0.7,
  products: 0.6,
  status: 0.6,
  details: 0.5,
  order: 0.35,
};
/** order -> running, services/s: SQLite, PostgreSQL with one process. */
const RUNNING_TARGET: Record<StoreKind, number> = { sqlite: 1200, postgres: 500 };
/** GET status on the large store against the small one. */
const SLOWDOWN_TARGET: Record<StoreKind, number> = { sqlite: 1.1, postgres: 1.1 };
const RSS_TARGET_MB = 180;

let stores: ReturnType<typeof benchStores> | undefined;

/** Every scenario on one store. */
async function benchStore(kind: StoreKind): Promise<Row[]> {
  const label = kind === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  const at = (c: number) => `${c} conns`;
  const store = await stores!.create(kind, `bench_${kind}`);
  const idsSmall = join(dataDir!, `ids-small-${kind}.txt`);
  const idsBig = join(dataDir!, `ids-big-${kind}.txt`);
  const env: Record<string, string> = {
    ...store.env,
    VRP_SIMULATED_SPEED: '0',
    VRP_RATE_LIMIT: '0',
    VRP_LOG_LEVEL: 'warn',
    VRP_DEMO: '1',
    VRP_WORKER_CONCURRENCY: '32',
    // The production default's /16, not the /22 the tests' servers get (test/helpers/
    // server-process.ts): order -> running creates 4,000 VMs per run (a warm-up round and the
    // measured one), twice on PostgreSQL's store, and a /22 gave out after 1,021 of them.
    VRP_SIM_IP_POOL: '10.80.0.0/16',
    // Room for every VM the order -> running runs create (8,000 on PostgreSQL: two rounds of
    // 2,000 in one process, then in an API and a worker process): the default hosts hold 2,048
    // 1-vCPU VMs.
    VRP_SIM_HOSTS: 'sim-host-1:100000:400000:10000000:5000000,sim-host-2:100000:400000:10000000:5000000',
    // The seeded services (seed.ts) are rows without VMs in the simulated hypervisor: the
    // power-state reconciler would rightly find every one of them vanished and mark it failed
    // (100,000 corrections, each a transaction, in the middle of a measurement).
    VRP_RECONCILE_INTERVAL: '0',
    ...serverNodeOptions(),
  };

  // The store: demo catalogue, one reseller and application, 1,000 running services.
  const opened = await openStore(store.options);
  await seedDemoCatalog(opened.db, Date.now());
  const reseller = await ensureReseller(opened.db, 'bench', Date.now());
  const app = await registerApplication(opened.db, { reseller: 'bench' }, Date.now());
  await opened.close();
  const owner = {
    resellerId: reseller.id,
    clientId: app.client_id,
    passwordEnc: sealedBenchPassword(store.options.dataDir),
  };
  resetIds(idsSmall);
  await store.seed(owner, SETTINGS.smallStore, idsSmall);
  // A copy of the small store as it is now, for the side-by-side status comparison at the end
  // (the later scenarios add services to the store in use).
  const small = enabled('status-big') ? await store.copy(`bench_${kind}_small`) : undefined;

  const floor = await startFloor();
  let server = await startBuilt(env);
  track(server.child);
  const rows: Row[] = [];
  const statusRss: number[] = [];

  const tokenBody = JSON.stringify({
    grant_type: 'client_credentials',
    client_id: app.client_id,
    client_secret: app.client_secret,
  });
  const tokenRes = await fetch(`${server.url}${BASE}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: tokenBody,
  });
  if (!tokenRes.ok) throw new Error(`token: ${tokenRes.status} ${await tokenRes.text()}`);
  const token = ((await tokenRes.json()) as { access_token: string }).access_token;
  const auth = { authorization: `Bearer ${token}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const product = DEMO_CATALOG.products[0]!;
  const orderBody = JSON.stringify({
    product_id: product.id,
    domain_name: 'bench.example.com',
    template_id: product.os_templates[0],
    cpu: 1,
    ram: 1,
    hdd: 20,
    ip: 1,
    backup: 10,
  });

  /** The same load against the server and the floor, alternating, repeated; medians. */
  const compare = async (key: Key, what: string, req: Req, connections: number): Promise<Row> => {
    const target = TARGETS[key];
    const row = await againstFloor(
      { key, store: kind, connections, name: `${label}, ${at(connections)}: ${what}` },
      req,
      server,
      floor,
      target === undefined ? undefined : (ratio) => ({ target: `ratio >= ${target}`, ok: ratio >= target }),
      store.databaseCpu,
    );
    rows.push(row);
    return row;
  };

  const statusReq = (idsFile: string): Req => ({
    method: 'GET',
    path: `${API}/service/00000000-0000-4000-8000-000000000000/status`,
    pathTemplate: `${API}/service/{id}/status`,
    idsFile,
    headers: auth,
  });
  const detailsReq = (idsFile: string): Req => ({
    method: 'GET',
    path: `${API}/service/00000000-0000-4000-8000-000000000000/details`,
    pathTemplate: `${API}/service/{id}/details`,
    idsFile,
    headers: auth,
  });

  const status1k = new Map<number, Row>();
  for (const c of SETTINGS.connections) {
    if (enabled('token')) {
      await compare(
        'token',
        'token issue (POST oauth/token, client_secret_post JSON)',
        {
          method: 'POST',
          path: `${BASE}/oauth/token`,
          headers: { 'content-type': 'application/json' },
          body: tokenBody,
        },
        c,
      );
    }
    if (enabled('version'))
      await compare('version', 'GET version', { method: 'GET', path: `${API}/version`, headers: auth }, c);
    if (enabled('products'))
      await compare('products', 'GET products', { method: 'GET', path: `${API}/products`, headers: auth }, c);
    if (enabled('status') || enabled('status-big')) {
      const row = await compare(
        'status',
        `GET status, random one of ${SETTINGS.smallStore.toLocaleString('en')} services`,
        statusReq(idsSmall),
        c,
      );
      status1k.set(c, row);
      statusRss.push(row.rssMb!);
    }
    if (enabled('details'))
      await compare(
        'details',
        `GET details, random one of ${SETTINGS.smallStore.toLocaleString('en')} services`,
        detailsReq(idsSmall),
        c,
      );
    if (enabled('order')) {
      await compare(
        'order',
        'POST create-order',
        { method: 'POST', path: `${API}/service/create-order`, headers: json, body: orderBody },
        c,
      );
    }
  }

  if (enabled('running')) {
    rows.push(await warmOrderToRunning(server, json, orderBody, store, `${label}, one process`));
    if (kind === 'postgres') {
      // The same with the HTTP API in one process and the worker in another.
      await stopServer(server);
      server = await startBuilt({ ...env, VRP_ROLE: 'api' });
      track(server.child);
      const worker = track(
        spawn(process.execPath, [...SERVER_NODE_FLAGS, serverProgram()], {
          env: { ...process.env, ...SERVER_ENV, ...env, VRP_ROLE: 'worker' },
          stdio: ['ignore', 'ignore', 'inherit'],
        }),
      );
      // Measured once it is ready, as the one process above is: once it listens for queued jobs
      // (its LISTEN is the last thing it does at start). Its start is not the pipeline's speed.
      await workerListening(store, worker);
      const row = await warmOrderToRunning(
        server,
        json,
        orderBody,
        store,
        `${label}, an API and a worker process`,
        worker.pid,
      );
      rows.push({ ...row, key: 'running-split', target: `> ${label} one process`, ok: undefined });
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('exit', r));
      await stopServer(server);
      server = await startBuilt(env);
      track(server.child);
    }
  }

  if (enabled('status-big')) {
    // Seed the large store while the server is stopped, then the same status load on it.
    await stopServer(server);
    const have = await store.count('select count(*) as n from services');
    writeFileSync(idsBig, readFileSync(idsSmall));
    const add = Math.max(0, SETTINGS.bigStore - have);
    const ms = await store.seed(owner, add, idsBig);
    console.log(
      `${label}: seeded ${add.toLocaleString('en')} services in ${(ms / 1000).toFixed(1)} s (${have.toLocaleString('en')} were there)`,
    );
    server = await startBuilt(env);
    track(server.child);
    copyFileSync(join(store.options.dataDir, 'secret.key'), join(small!.options.dataDir, 'secret.key'));
    const smallServer = await startBuilt({ ...env, ...small!.env });
    track(smallServer.child);
    for (const c of SETTINGS.connections) {
      const big = await compare(
        'status-big',
        `GET status, random one of ${SETTINGS.bigStore.toLocaleString('en')} services`,
        statusReq(idsBig),
        c,
      );
      statusRss.push(big.rssMb!, procStatus(server.child.pid!, 'VmHWM') / 2 ** 20);
      // The slowdown: a server on the small store and one on the large store, loaded in turn in
      // the same minutes (the same machine noise for both), their medians compared.
      const base = { connections: c, duration: SETTINGS.duration, warmup: SETTINGS.warmup };
      const smallRuns: Measured[] = [];
      const bigRuns: Measured[] = [];
      for (let r = 0; r < SETTINGS.repeats; r++) {
        smallRuns.push(
          await runLoad({ ...base, ...statusReq(idsSmall), url: smallServer.url }, smallServer.child.pid!),
        );
        bigRuns.push(await runLoad({ ...base, ...statusReq(idsBig), url: server.url }, server.child.pid!));
      }
      statusRss.push(...smallRuns.map((x) => x.rssPeak / 2 ** 20));
      const failed = [...smallRuns, ...bigRuns].some((x) => x.non2xx > 0 || x.errors > 0 || x.timeouts > 0);
      const rpsSmall = median(smallRuns.map((x) => x.rps));
      const rpsBig = median(bigRuns.map((x) => x.rps));
      const cpu = (runs: Measured[]) => median(runs.map((x) => x.cpuUserUs + x.cpuSystemUs));
      const slowdown = rpsSmall / rpsBig;
      const limit = SLOWDOWN_TARGET[kind];
      rows.push({
        key: 'status-big',
        store: kind,
        connections: c,
        name:
          `${label}, ${at(c)}: status slowdown, ${SETTINGS.bigStore.toLocaleString('en')} vs ${SETTINGS.smallStore.toLocaleString('en')} services ` +
          `(two servers loaded in turn: ${rpsSmall.toFixed(0)} vs ${rpsBig.toFixed(0)} req/s; ` +
          `server CPU per request ${cpu(smallRuns).toFixed(0)} -> ${cpu(bigRuns).toFixed(0)} µs; ` +
          `ratios to the floor above: ${(status1k.get(c)!.ratio! / big.ratio!).toFixed(2)}x)`,
        unit: 'x',
        server: slowdown,
        runs: { server: smallRuns.map((x) => x.rps), floor: bigRuns.map((x) => x.rps) },
        target: `<= ${limit}`,
        ok: slowdown <= limit && !failed && !big.invalid,
        ...(failed ? { invalid: 'a status run answered non-2xx or failed' } : {}),
      });
      console.log(
        `${label}, ${at(c)}: status slowdown ${slowdown.toFixed(3)}x (small ${smallRuns.map((x) => x.rps.toFixed(0)).join(', ')}; ` +
          `large ${bigRuns.map((x) => x.rps.toFixed(0)).join(', ')}; CPU per request ${cpu(smallRuns).toFixed(0)} -> ${cpu(bigRuns).toFixed(0)} µs)`,
      );
    }
    await stopServer(smallServer);
    await small!.close();
  }
  await stopServer(server);
  floor.child.kill('SIGTERM');
  await store.close();
  if (enabled('ops-lists')) rows.push(...(await operatorLists(kind, label, env)));
  if (statusRss.length > 0) {
    const peak = Math.max(...statusRss);
    rows.push({
      key: 'rss',
      store: kind,
      name: `${label}: server peak RSS under the status load (sampled VmRSS; VmHWM of the large-store server)`,
      unit: 'MB',
      server: peak,
      ...(kind === 'sqlite' ? { target: `<= ${RSS_TARGET_MB}`, ok: peak <= RSS_TARGET_MB } : {}),
    });
    console.log(`${label}: peak RSS under status load: ${peak.toFixed(0)} MB`);
  }
  return rows;
}

/**
 * PostgreSQL's targets are SQLite's figures: each request scenario's ratio within 0.1 of
 * SQLite's at the same connection count; API + worker faster than one process.
 */
function relativeTargets(rows: Row[]): Row[] {
  return rows.map((r) => {
    if (r.store !== 'postgres') return r;
    if (r.unit === 'req/s' && r.ratio !== undefined) {
      const lite = rows.find(
        (x) => x.store === 'sqlite' && x.key === r.key && x.connections === r.connections,
      );
      if (!lite?.ratio) return r;
      return {
        ...r,
        target: `ratio >= ${(lite.ratio - 0.1).toFixed(3)} (SQLite's - 0.1)`,
        ok: !r.invalid && r.ratio >= lite.ratio - 0.1,
      };
    }
    if (r.key === 'running-split') {
      const one = rows.find((x) => x.store === 'postgres' && x.key === 'running');
      if (!one) return r;
      return { ...r, ok: !r.invalid && r.server > one.server };
    }
    return r;
  });
}

/**
 * The ladder: the bare floor against the same app with, one rung at a time, what every
 * production server on this stack carries (a logger, per-request hooks, request metrics, a
 * response schema; floor.ts), `GET version` alternating with the bare floor as the server
 * scenarios do. It shows how far up the 0.8 ratio of the read targets reaches before any work
 * of this project's own. The last rung is the project's own app (floor.ts, `app`): a constant
 * route behind the app's logger and hooks, then its `GET version`, which adds authentication,
 * the envelope and a response schema and nothing else (its handler answers a constant).
 */
async function ladder(): Promise<Row[]> {
  type Load = { name: string; req: Req };
  const version = `${API}/version`;
  const bareRung = (layers: readonly FloorLayer[]) => ({
    layers,
    loads: (): Load[] => [
      {
        name: `Floor with ${layers.join(' + ')}, %c: GET version (no project code)`,
        req: { method: 'GET', path: version },
      },
    ],
  });
  const rungs = [
    bareRung(['logger']),
    bareRung(['logger', 'hooks', 'metrics']),
    bareRung(['logger', 'hooks', 'metrics', 'schema']),
    {
      layers: ['app'] as const,
      loads: (token?: string): Load[] => [
        {
          name: "The project's app, its logger and hooks, no route work, %c: a constant route",
          req: { method: 'GET', path: APP_FLOOR_PATH },
        },
        {
          name: "The project's app, %c: GET version (+ authentication, envelope, response schema)",
          req: { method: 'GET', path: version, headers: { authorization: `Bearer ${token}` } },
        },
      ],
    },
    {
      layers: ['app-info'] as const,
      loads: (token?: string): Load[] => [
        {
          name: "The project's app at log level info (one access line per request, asynchronously to /dev/null), %c: GET version",
          req: { method: 'GET', path: version, headers: { authorization: `Bearer ${token}` } },
        },
      ],
    },
  ];
  const rows: Row[] = [];
  const bare = await startFloor();
  for (const rung of rungs) {
    const layered = await startFloor(rung.layers);
    for (const connections of SETTINGS.connections) {
      for (const { name, req } of rung.loads(layered.token)) {
        const head = {
          key: 'ladder',
          connections,
          name: name.replace('%c', `${connections} conns`),
        } as const;
        rows.push(await againstFloor(head, req, layered, bare));
      }
    }
    layered.child.kill('SIGTERM');
  }
  bare.child.kill('SIGTERM');
  return rows;
}

async function main(): Promise<Row[]> {
  dataDir = mkdtempSync(join(tmpdir(), 'vrp-bench-'));
  stores = benchStores(dataDir);
  if (args.profile) mkdirSync(args.profile, { recursive: true });
  const rows: Row[] = [];
  try {
    // The ladder and the real VMs need no store.
    if (ALL.some((k) => k !== 'ladder' && k !== 'libvirt' && enabled(k)))
      for (const kind of STORES) rows.push(...(await benchStore(kind)));
    if (enabled('ladder')) rows.push(...(await ladder()));
  } finally {
    stores.stop();
  }
  return relativeTargets(rows);
}

/**
 * order -> running as a server does it once it has run for a while: a warm-up round of as many
 * services first (its figures printed, not counted), then the measured round. What the first
 * round pays is paid once in a process's life: V8 compiling the code, and PostgreSQL planning
 * each statement anew on each pooled connection until it settles on a plan for it (five runs of
 * each statement's shape on each connection; bench/FINDINGS.md, "A server's first services").
 * The request scenarios warm up the same way. `--cold` measures the first round alone.
 */
async function warmOrderToRunning(
  ...[server, headers, orderBody, store, how, workerPid]: Parameters<typeof orderToRunning>
): Promise<Row> {
  if (args.cold) return orderToRunning(server, headers, orderBody, store, how, workerPid);
  const first = await orderToRunning(server, headers, orderBody, store, `${how}, warm-up round`, workerPid);
  const row = await orderToRunning(server, headers, orderBody, store, how, workerPid, first);
  return first.invalid ? { ...row, ok: false, invalid: `warm-up round: ${first.invalid}` } : row;
}

/**
 * order -> create -> running at speed 0: `pipeline` services, each ordered then provisioned
 * over HTTP from here with bounded concurrency; done when the store has no queued or running
 * job left (polled through the jobs status index). Services per second, first order to last
 * `running`.
 */
async function orderToRunning(
  server: ServerProcess,
  headers: Record<string, string>,
  orderBody: string,
  store: BenchStore,
  how: string,
  workerPid?: number,
  /** The warm-up round before this one, named in the row. */
  warmup?: Row,
): Promise<Row> {
  const K = SETTINGS.pipeline;
  const ids: string[] = [];
  const failures: string[] = [];
  const outstanding = () =>
    store.count(`select count(*) as n from jobs where status in ('queued', 'running')`);
  if (store.kind === 'postgres') {
    await store.rows('vacuum analyze');
    await store.rows('checkpoint');
  }
  const stopRss = sampleRss(server.child.pid!);
  // The CPU of the server, and of the worker process when there is one.
  const pids = [server.child.pid!, ...(workerPid ? [workerPid] : [])];
  const cpuOf = () =>
    pids.map(cpuTime).reduce((a, b) => ({ user: a.user + b.user, system: a.system + b.system }));
  const cpu0 = cpuOf();
  const db0 = store.databaseCpu?.();
  const own0 = process.cpuUsage();
  // Not fetch: it cost the bench three times the CPU per request (http-client.ts).
  const client = benchClient(SETTINGS.pipelineConcurrency);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: SETTINGS.pipelineConcurrency }, async () => {
      while (next < K) {
        next++;
        const o = await client.post(`${server.url}${API}/service/create-order`, headers, orderBody);
        if (!o.ok) {
          failures.push(`create-order ${o.status}`);
          continue;
        }
        const id = (JSON.parse(o.text) as { data: { service_id: string }[] }).data[0]!.service_id;
        ids.push(id);
        const c = await client.post(`${server.url}${API}/service/${id}/create`, headers);
        if (!c.ok) failures.push(`create ${c.status}`);
      }
    }),
  );
  client.close();
  const accepted = performance.now() - t0;
  while ((await outstanding()) > 0) await new Promise((r) => setTimeout(r, 5));
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = cpuOf();
  // The bench's own share of the machine: its HTTP client and its polls.
  const own1 = process.cpuUsage(own0);
  const db1 = store.databaseCpu?.();
  // PostgreSQL's own processes, per service (the bench's polls of the jobs count included).
  const dbCpu =
    db0 && db1
      ? `; PostgreSQL's processes ${((db1.user + db1.system - db0.user - db0.system) / K).toFixed(0)} µs of CPU per service`
      : '';
  const rss = stopRss();
  // Each status with the reasons of those not running (a failed create says why).
  const counted = new Map<string, number>();
  for (let i = 0; i < ids.length; i += 500) {
    const part = ids.slice(i, i + 500);
    const found = await store.rows<{ status: string; error_message: string | null; n: number | string }>(
      `select status, error_message, count(*) as n from services where id in (${part.map(() => '?').join(', ')}) group by status, error_message`,
      part,
    );
    for (const f of found) {
      const key =
        f.status === 'running' || f.error_message === null ? f.status : `${f.status} (${f.error_message})`;
      counted.set(key, (counted.get(key) ?? 0) + Number(f.n));
    }
  }
  const statuses = [...counted].map(([status, n]) => ({ status, n }));
  const running = statuses.find((s) => s.status === 'running')?.n ?? 0;
  const perSecond = running / seconds;
  const notRunning = statuses.filter((s) => s.status !== 'running').map((s) => `${s.n} ${s.status}`);
  console.log(
    `${how}: order -> running: ${running}/${K} running in ${seconds.toFixed(2)} s (all accepted at ${(accepted / 1000).toFixed(2)} s): ` +
      `${perSecond.toFixed(0)} services/s, server CPU ${((cpu1.user + cpu1.system - cpu0.user - cpu0.system) / K).toFixed(0)} µs per service${dbCpu}; the bench's own ${((own1.user + own1.system) / K).toFixed(0)} µs${failures.length ? `; failures: ${failures.slice(0, 5).join(', ')}` : ''}${notRunning.length ? `; not running: ${notRunning.join(', ')}` : ''}`,
  );
  const invalid = [
    ...(failures.length ? [`${failures.length} requests failed (${failures.slice(0, 3).join(', ')})`] : []),
    ...(notRunning.length ? [`not running: ${notRunning.join(', ')}`] : []),
  ];
  const target = RUNNING_TARGET[store.kind];
  return {
    key: 'running',
    store: store.kind,
    name: `${how}: order -> create -> running (${K.toLocaleString('en')} services, ${SETTINGS.pipelineConcurrency} at once, speed 0${warmup ? `, after a warm-up round of as many at ${warmup.server.toFixed(0)} services/s` : ''}; all accepted after ${(accepted / 1000).toFixed(2)} s, all running after ${seconds.toFixed(2)} s${dbCpu})`,
    unit: 'services/s',
    server: perSecond,
    rssMb: rss / 2 ** 20,
    cpuUs: { server: [(cpu1.user - cpu0.user) / K, (cpu1.system - cpu0.system) / K], floor: [] },
    target: `>= ${target}`,
    ok: perSecond >= target && invalid.length === 0,
    ...(invalid.length ? { invalid: invalid.join('; ') } : {}),
  };
}

/**
 * The operator API's list routes at scale: a store whose measured reseller has
 * `smallStore` services, and the same with `bigStore` - `smallStore` services of another
 * reseller beside them, every service with its open usage interval. Two servers, one on each
 * store, are loaded in turn in the same minutes (as the status slowdown is), with the filtered,
 * paged services list (by reseller and status; by status across resellers) and the measured
 * reseller's usage for the last 30 days; the ratio of their median req/s must stay within 3x.
 */
async function operatorLists(kind: StoreKind, label: string, env: Record<string, string>): Promise<Row[]> {
  const since = Date.now() - 40 * 86_400_000;
  const make = async (name: string, others: number) => {
    const bench = await stores!.create(kind, `${name}_${kind}`);
    const dir = bench.options.dataDir;
    const store = await openStore(bench.options);
    await seedDemoCatalog(store.db, Date.now());
    const target = await ensureReseller(store.db, 'target', Date.now());
    const targetApp = await registerApplication(store.db, { reseller: 'target' }, Date.now());
    const other = await ensureReseller(store.db, 'others', Date.now());
    const otherApp = await registerApplication(store.db, { reseller: 'others' }, Date.now());
    const operator = await createOperator(store.db, { name: 'bench' }, Date.now());
    await store.close();
    const ids = join(dir, 'ids.txt');
    resetIds(ids);
    const passwordEnc = sealedBenchPassword(dir);
    await bench.seed(
      { resellerId: target.id, clientId: targetApp.client_id, passwordEnc, domainLabel: 'target' },
      SETTINGS.smallStore,
      ids,
      { since },
    );
    const ms =
      others > 0
        ? await bench.seed(
            { resellerId: other.id, clientId: otherApp.client_id, passwordEnc, domainLabel: 'others' },
            others,
            ids,
            { since },
          )
        : 0;
    await bench.close();
    if (others > 0)
      console.log(
        `${label}, ops-lists: seeded ${others.toLocaleString('en')} services of another reseller in ${(ms / 1000).toFixed(1)} s`,
      );
    const server = await startBuilt({ ...env, ...bench.env });
    track(server.child);
    const res = await fetch(`${server.url}${BASE}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'client_credentials',
        client_id: operator.client_id,
        client_secret: operator.client_secret,
      }),
    });
    if (!res.ok) throw new Error(`operator token: ${res.status} ${await res.text()}`);
    const token = ((await res.json()) as { access_token: string }).access_token;
    return { server, headers: { authorization: `Bearer ${token}` }, targetId: target.id };
  };
  const small = await make('ops_small', 0);
  const big = await make('ops_big', SETTINGS.bigStore - SETTINGS.smallStore);
  const month = `from=${new Date(Date.now() - 30 * 86_400_000).toISOString()}&to=${new Date().toISOString()}`;
  const cases = [
    [
      'services list, one reseller and status, first page of 100',
      (id: string) => `${OPS}/services?reseller_id=${id}&status=running&limit=100`,
    ],
    [
      'services list, one status across resellers, first page of 100',
      () => `${OPS}/services?status=running&limit=100`,
    ],
    ['usage of one reseller, last 30 days', (id: string) => `${OPS}/usage?${month}&reseller_id=${id}`],
    // Seeded domains are node<n>.target.example.com and node<n>.others.example.com (bench/seed.ts):
    // the prefix finds node123.target and node123.others, the substring node123.target only.
    [
      'services search by domain prefix, first page of 100',
      () => `${OPS}/services?q=node123.&match=prefix&limit=100`,
    ],
    [
      'services search by domain substring, first page of 100',
      () => `${OPS}/services?q=ode123.targ&limit=100`,
    ],
    ['services list sorted by domain, first page of 100', () => `${OPS}/services?sort=domain&limit=100`],
  ] as const;
  const rows: Row[] = [];
  for (const connections of SETTINGS.connections)
    for (const [what, path] of cases) {
      const base = { connections, duration: SETTINGS.duration, warmup: SETTINGS.warmup };
      const smallRuns: Measured[] = [];
      const bigRuns: Measured[] = [];
      for (let r = 0; r < SETTINGS.repeats; r++) {
        for (const [side, runs] of [
          [small, smallRuns],
          [big, bigRuns],
        ] as const) {
          runs.push(
            await runLoad(
              {
                ...base,
                method: 'GET',
                path: path(side.targetId),
                headers: side.headers,
                url: side.server.url,
              },
              side.server.child.pid!,
            ),
          );
        }
      }
      const failed = [...smallRuns, ...bigRuns].some((x) => x.non2xx > 0 || x.errors > 0 || x.timeouts > 0);
      const rpsSmall = median(smallRuns.map((x) => x.rps));
      const rpsBig = median(bigRuns.map((x) => x.rps));
      const slowdown = rpsSmall / rpsBig;
      const name =
        `${label}, ${connections} conns: operator ${what}: ${SETTINGS.bigStore.toLocaleString('en')} vs ${SETTINGS.smallStore.toLocaleString('en')} services ` +
        `(two servers loaded in turn: ${rpsSmall.toFixed(0)} vs ${rpsBig.toFixed(0)} req/s)`;
      rows.push({
        key: 'ops-lists',
        store: kind,
        connections,
        name,
        unit: 'x',
        server: slowdown,
        runs: { server: smallRuns.map((x) => x.rps), floor: bigRuns.map((x) => x.rps) },
        p50: median(bigRuns.map((x) => x.p50)),
        p99: median(bigRuns.map((x) => x.p99)),
        target: '<= 3',
        ok: slowdown <= 3 && !failed,
        ...(failed ? { invalid: 'a run answered non-2xx or failed' } : {}),
      });
      console.log(
        `${name}: slowdown ${slowdown.toFixed(3)}x, p50 / p99 ${median(bigRuns.map((x) => x.p50))} / ${median(bigRuns.map((x) => x.p99))} ms${failed ? '  INVALID: non-2xx or errors' : ''}`,
      );
    }
  await stopServer(small.server);
  await stopServer(big.server);
  return rows;
}

const started = Date.now();
const resultsFile = join(here, 'RESULTS.md');
// The real-VM scenario (bench/libvirt.ts) keeps a section of its own in RESULTS.md.
if (only?.size === 1 && only.has('libvirt')) {
  const runs = await libvirtProvisioning(libvirtTemplate);
  if (runs) {
    writeProvisioningSection(resultsFile, provisioningSection(runs));
    console.log(`wrote its section of ${resultsFile}`);
  }
  process.exit(0);
}
let rows: Row[];
let libvirtRuns: ProvisioningRun[] | undefined;
let libvirtFailed = false;
try {
  rows = await main();
} catch (err) {
  console.error('bench failed:', err);
  cleanup();
  process.exit(1);
}
// A failure of the real-VM scenario, the last, does not throw away the hour of figures before
// it: they are written, its section stays the last one measured, and the run exits 1.
if (enabled('libvirt')) {
  try {
    libvirtRuns = await libvirtProvisioning(libvirtTemplate);
  } catch (err) {
    console.error('libvirt provisioning failed (its section of RESULTS.md is left as it was):', err);
    libvirtFailed = true;
  }
}
cleanup();
const elapsed = (Date.now() - started) / 1000;
if (only) {
  console.log(`(--only: bench/RESULTS.md not written; ${elapsed.toFixed(0)} s)`);
} else {
  const file = resultsFile;
  // The sections other scripts measured (bench/sections.ts) stay as they were.
  const previous = existsSync(file) ? sectionsOf(readFileSync(file, 'utf8')) : new Map();
  writeResults(file, rows, {
    quick,
    settings: SETTINGS,
    elapsedSeconds: elapsed,
    findings: join(here, 'FINDINGS.md'),
  });
  for (const [name, section] of previous) writeSection(file, name, section.text);
  // The real-VM section: this run's, or the last one measured (no template this time).
  if (libvirtRuns) writeProvisioningSection(file, provisioningSection(libvirtRuns));
  console.log(`wrote ${file} (${elapsed.toFixed(0)} s)`);
}
if (args.profile && existsSync(args.profile))
  console.log(`CPU profiles of the server: ${resolve(args.profile)}`);
if (args['heap-profile'] && existsSync(args['heap-profile']))
  console.log(`Allocation profiles of the server: ${resolve(args['heap-profile'])}`);
if (libvirtFailed) process.exit(1);
