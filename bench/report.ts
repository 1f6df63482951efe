/** Writes bench/RESULTS.md: the machine, the settings, every figure with its floor, ratio and target. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export interface Row {
  readonly key: string;
  /** The store the scenario ran on. */
  readonly store?: 'sqlite' | 'postgres';
  /** The connections of its load, for a request scenario. */
  readonly connections?: number;
  readonly name: string;
  readonly unit: 'req/s' | 'services/s' | 'x' | 'MB';
  /** The server's figure (median of the runs, for req/s). */
  readonly server: number;
  readonly floor?: number;
  readonly ratio?: number;
  readonly runs?: { readonly server: readonly number[]; readonly floor: readonly number[] };
  /** Server latency, ms (medians of the runs). */
  readonly p50?: number;
  readonly p99?: number;
  /** CPU time per request, µs, [user, system] (medians of the runs), of the server and of the floor. */
  readonly cpuUs?: { readonly server: readonly number[]; readonly floor: readonly number[] };
  /** The rest of the machine in the server's and in the floor's runs (medians of the runs). */
  readonly machine?: { readonly server: MachineShare; readonly floor: MachineShare };
  /** Peak resident set of the server during the server runs, MB. */
  readonly rssMb?: number;
  readonly target?: string;
  readonly ok?: boolean;
  /** Set when a run had non-2xx answers or errors: the figure is not valid. */
  readonly invalid?: string;
}

/** What the rest of the machine did during a scenario's runs. */
export interface MachineShare {
  /** The load generator's CPU time per answered request (user + system), µs. */
  readonly loadUs: number;
  /** The database's processes' CPU time per answered request, µs; NaN without a database server. */
  readonly databaseUs: number;
  /** The cores nobody used, on average over the measured run. */
  readonly idleCores: number;
}

function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1]!.trim();
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown';
}

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n)
    ? '—'
    : n.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });

const cpu = (us: readonly number[] | undefined) =>
  us && us.length === 2 ? `${fmt(us[0]! + us[1]!)} (${fmt(us[0])}+${fmt(us[1])})` : '—';

/** The machine's share as bench/run.ts prints it after "the load generator's". */
export function machineLine(m: { readonly server: MachineShare; readonly floor: MachineShare }): string {
  const db = Number.isNaN(m.server.databaseUs) ? '' : `, PostgreSQL's ${fmt(m.server.databaseUs)}`;
  return (
    `µs/request ${fmt(m.server.loadUs)} (floor runs ${fmt(m.floor.loadUs)})${db}; ` +
    `cores idle ${fmt(m.server.idleCores, 2)} (floor runs ${fmt(m.floor.idleCores, 2)})`
  );
}

/** The two cells of the machine's share: load generator / database µs per request, and idle cores. */
const machineCells = (m: Row['machine']) =>
  m === undefined
    ? '— | —'
    : `${fmt(m.server.loadUs)} / ${fmt(m.server.databaseUs)} (${fmt(m.floor.loadUs)}) | ` +
      `${fmt(m.server.idleCores, 2)} (${fmt(m.floor.idleCores, 2)})`;

export function writeResults(
  file: string,
  rows: readonly Row[],
  o: {
    quick: boolean;
    settings: {
      connections: readonly number[];
      duration: number;
      warmup: number;
      repeats: number;
      bigStore: number;
      smallStore: number;
    };
    elapsedSeconds: number;
    findings: string;
  },
): void {
  const s = o.settings;
  const targets = rows.filter((r) => r.target);
  const held = targets.filter((r) => r.ok).length;
  const lines = [
    '# Benchmark results',
    '',
    `Written by \`npm run bench${o.quick ? ' -- --quick' : ''}\` on ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')} ` +
      `(the run took ${fmt(o.elapsedSeconds)} s).`,
    '',
    `- Machine: ${cpus().length} cores, ${cpuModel()}, ${fmt(totalmem() / 2 ** 30, 1)} GiB memory; load generator, bench driver and server share it.`,
    `- Node ${process.version}; server: on SQLite (a fresh data dir; durable commits: the WAL flushed with fdatasync before a commit is told done, as in production) and on PostgreSQL (a fresh database on a throwaway server, durable commits: fsync, full page writes and synchronous_commit on, as in production), simulated hypervisor at speed 0, rate limiting off, log level warn, worker concurrency 32.`,
    `- Load: autocannon in a child process, at ${s.connections.join(' and at ')} connections, ${s.warmup} s warm-up then ${s.duration} s measured per run; ` +
      `${s.repeats} runs of the server alternating with ${s.repeats} of the floor; figures are medians.`,
    '- Floor: a bare Fastify app (no logger, no hooks) answering a constant JSON envelope to the same requests, in the same run: the best this stack does on this machine. Ratio = server / floor.',
    o.quick
      ? `- **Quick mode** (\`--quick\`): shorter runs, ${s.repeats} repeats, and ${fmt(s.bigStore)} services instead of 1,000,000 for the large store. Run \`npm run bench\` for the figures of record.`
      : `- Full mode: the large store holds ${fmt(s.bigStore)} services.`,
    '',
    `**Targets: ${held} of ${targets.length} hold.**`,
    '',
    '| scenario | server | floor | ratio | server CPU µs per request (user+sys) | floor CPU µs per request | load generator / PostgreSQL CPU µs per request (the load generator alone in the floor runs) | cores idle (in the floor runs) | server p50 / p99 ms | server peak RSS MB | target | holds |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|',
  ];
  for (const r of rows) {
    const value =
      r.unit === 'x' ? `${fmt(r.server, 2)}x` : `${fmt(r.server, r.unit === 'MB' ? 0 : 0)} ${r.unit}`;
    const holds = r.ok === undefined ? '—' : r.ok ? 'yes' : '**no**';
    lines.push(
      `| ${r.name}${r.invalid ? ` **INVALID: ${r.invalid}**` : ''} | ${value} | ${r.floor === undefined ? '—' : `${fmt(r.floor)} req/s`} | ` +
        `${r.ratio === undefined ? '—' : fmt(r.ratio, 3)} | ${cpu(r.cpuUs?.server)} | ${cpu(r.cpuUs?.floor)} | ` +
        `${machineCells(r.machine)} | ` +
        `${r.p50 === undefined ? '—' : `${r.p50} / ${r.p99}`} | ` +
        `${r.rssMb === undefined ? '—' : fmt(r.rssMb)} | ${r.target ?? '—'} | ${holds} |`,
    );
  }
  lines.push(
    '',
    "CPU time is that of the answering process over the measured part of each run (from /proc, median of the runs), per answered request; for order -> running it is the server's CPU per service (two requests and the job). CPU per request is steadier than req/s on a shared machine.",
    '',
    "The rest of the machine over the same part of each run: the load generator's own CPU time per answered request (autocannon's process), PostgreSQL's processes' (the postmaster and every backend; in the server's runs of the PostgreSQL store), and the cores nobody used (/proc/stat's idle and iowait over the run's length, out of the machine's cores). A server whose process uses about one core with cores left idle is bound by its own main thread; a run whose processes all sit below a core with cores idle waits on its round trips; a floor whose load generator uses a whole core measures the load generator.",
    '',
    'Every run (req/s), server | floor (for the slowdown: small store | large store):',
    '',
  );
  for (const r of rows) {
    if (r.runs) {
      lines.push(
        `- ${r.name}: ${r.runs.server.map((x) => fmt(x)).join(', ')} | ${r.runs.floor.map((x) => fmt(x)).join(', ')}`,
      );
    }
  }
  lines.push(
    '',
    'A run with any non-2xx answer, socket error or timeout (on the server or the floor) makes its scenario invalid; it is marked above and counts as a miss.',
    '',
  );
  if (existsSync(o.findings)) lines.push(readFileSync(o.findings, 'utf8').trimEnd(), '');
  writeFileSync(file, lines.join('\n'));
}
