/**
 * `npm test`: the whole suite with Node's test runner, on SQLite and on a throwaway
 * PostgreSQL that this script starts and stops (VRP_TEST_STORES=sqlite skips it).
 * Arguments narrow it: `npm test -- test/http` runs one folder, flags pass through
 * (`npm test -- --test-name-pattern=oauth`).
 *
 * Every process the tests start carries VRP_TEST_RUN in its environment. A test that leaves
 * one behind (a server, a worker, a PostgreSQL, any child) fails the run: it is named and ended.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { appendFileSync, existsSync, globSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { type PostgresServer, startPostgres } from './postgres.ts';
import { leftBehind } from './processes.ts';
import { mergeTimes, readCosts, runOrder, writeCosts } from './test-costs.ts';
import { ONE_AT_A_TIME, writeLanes } from './test-lanes.ts';
import { prepareTools, TOOLS } from './test-tools.ts';

/**
 * Test processes (lanes, scripts/test-lanes.ts) at once: one more than the cores (VRP_TEST_LANES
 * sets it). Many files spend much of their time waiting (for a server process, a browser page, a
 * timer); a lane more keeps the cores busy meanwhile. Measured on the 2-core machine with the
 * same code: 2 lanes 52-54 s, 3 lanes 46-48 s at ~5 % more CPU time, 4 lanes no better than 3.
 */
const LANES = lanesWanted(process.env['VRP_TEST_LANES']);

function lanesWanted(setting: string | undefined): number {
  if (setting === undefined || setting === '') return availableParallelism() + 1;
  if (!/^[1-9]\d*$/.test(setting)) {
    console.error(
      `VRP_TEST_LANES must be a whole number of lanes, 1 or more (got ${JSON.stringify(setting)})`,
    );
    process.exit(2);
  }
  return Number(setting);
}

/**
 * The whole run's budget, in seconds (VRP_TEST_WATCHDOG; default 45 minutes, three times what
 * CI's run with the real-VM tests takes): past it the run is ended and fails, naming the test
 * files still running. A hang is a failure with a name, never a run that does not end.
 */
const WATCHDOG_S = wholeSeconds('VRP_TEST_WATCHDOG', 45 * 60);

function wholeSeconds(name: string, fallback: number): number {
  const setting = process.env[name];
  if (setting === undefined || setting === '') return fallback;
  if (!/^[1-9]\d*$/.test(setting)) {
    console.error(`${name} must be a whole number of seconds, 1 or more (got ${JSON.stringify(setting)})`);
    process.exit(2);
  }
  return Number(setting);
}

/**
 * With VRP_TEST_COVERAGE=1 (.ci/run sets it), Node's own coverage of src/ is measured over the
 * lanes and every process they start (they inherit NODE_V8_COVERAGE), printed after the results,
 * and the run fails if it falls below these floors: the suite's figures when they were set
 * (2026-11-27, without the real-VM tests: lines 96.19 %, branches 93.22 %, functions 96.62 %),
 * in whole percents (Node reads the floors as integers), a point under the figures for the runs'
 * spread (timing-dependent paths move branches by ~0.1). Raise them as coverage grows; never
 * lower them to let a change in. Node counts the files a run loads (the suite loads all of src/).
 */
const COVERAGE_FLOOR = { lines: 95, branches: 92, functions: 95 };

function coverageFlags(setting: string | undefined): string[] {
  if (setting === undefined || setting === '' || setting === '0') return [];
  return [
    '--experimental-test-coverage',
    '--test-coverage-include=src/**',
    `--test-coverage-lines=${COVERAGE_FLOOR.lines}`,
    `--test-coverage-branches=${COVERAGE_FLOOR.branches}`,
    `--test-coverage-functions=${COVERAGE_FLOOR.functions}`,
  ];
}

/** The test files the lanes are running now (scripts/test-lane.ts writes them). */
function runningFiles(dir: string): string[] {
  try {
    return readdirSync(join(dir, 'queue'))
      .filter((f) => f.startsWith('running-'))
      .map((f) => readFileSync(join(dir, 'queue', f), 'utf8'));
  } catch {
    return [];
  }
}

const args = process.argv.slice(2);
const paths = args.filter((a) => !a.startsWith('--'));
const flags = args.filter((a) => a.startsWith('--'));
const patterns =
  paths.length > 0
    ? paths.map((p) => (p.endsWith('.ts') ? p : `${p.replace(/\/$/, '')}/**/*.test.ts`))
    : ['test/**/*.test.ts'];
const files = [...new Set(patterns.flatMap((p) => globSync(p)))].sort();
if (files.length === 0) {
  console.error(`No test files match ${patterns.join(' ')}`);
  process.exit(1);
}

const inCi = ['true', '1'].includes(process.env['CI'] ?? '');
const say = (line: string) => console.log(`npm test: ${line}`);

// The tools from outside npm that the chosen files need (scripts/test-tools.ts): found,
// installed when this process may, or their tests skipped with one line each (failed in CI).
const usesPostgres = process.env['VRP_TEST_STORES'] !== 'sqlite' && !process.env['VRP_TEST_PG_URL'];
const tools = prepareTools(
  { installWanted: process.env['VRP_TEST_INSTALL'] !== '0', say },
  TOOLS.filter((t) => (t.name === 'postgres' ? usesPostgres : files.some((f) => t.neededBy.test(f)))),
);
const libvirtFiles = files.filter((f) => ONE_AT_A_TIME.test(f));
const noTemplate = libvirtFiles.length > 0 && !process.env['VRP_TEST_LIBVIRT_TEMPLATE'];
if (noTemplate) {
  say(
    `the real-VM tests (${libvirtFiles.length} files) need QEMU/libvirt and a guest template: ` +
      'as root, `bash scripts/libvirt/setup-ci.sh` installs them and prints the path to set as VRP_TEST_LIBVIRT_TEMPLATE' +
      (inCi ? '' : '; they are skipped'),
  );
}
if (inCi && (tools.missing.length > 0 || noTemplate)) {
  console.error('npm test: under CI=true no test is skipped for a missing tool (see above)');
  process.exit(1);
}

let pg: PostgresServer | undefined;
if (usesPostgres && !tools.missing.some((t) => t.name === 'postgres')) {
  pg = await startPostgres();
  console.log(`PostgreSQL for tests at ${pg.url}`);
}
const stopPg = () => pg?.stop();

// Node keeps what it compiled (our TypeScript after type stripping, the dependencies) here, so
// the lanes and every server or CLI process a test starts skip most of that work:
// about a third of a process start. Safe to share: entries are keyed by the source's content.
const compileCache = process.env['NODE_COMPILE_CACHE'] || resolve('.tmp/compile-cache');

const runId = randomUUID();
// Flags that select tests by name or `only` (scripts/test-lane.ts says why lanes need to know).
const filtered = flags.some((f) => /^--test-(name-pattern|skip-pattern|only)\b/.test(f));
// In the order the last run's costs suggest (scripts/test-costs.ts); VRP_TEST_COSTS names
// another record (the runner's own tests run it on fixtures).
const costsFile = resolve(process.env['VRP_TEST_COSTS'] || '.tmp/test-times.json');
const lanes = writeLanes(runOrder(files, readCosts(costsFile)), LANES, filtered);
// Where the lanes write each file's times (scripts/test-lane.ts); VRP_TEST_TIMES gets a copy.
const times = join(lanes.dir, 'times');
let status = 1;
try {
  const runner = spawn(
    process.execPath,
    [
      '--test',
      `--test-concurrency=${LANES}`,
      '--test-timeout=300000',
      ...coverageFlags(process.env['VRP_TEST_COVERAGE']),
      ...flags,
      ...lanes.paths,
    ],
    {
      stdio: 'inherit',
      // Its own process group, so the watchdog can end it and everything it started.
      detached: true,
      env: {
        ...process.env,
        ...tools.env,
        NODE_ENV: 'test',
        NODE_COMPILE_CACHE: compileCache,
        VRP_TEST_RUN: runId,
        VRP_TEST_TIMES: times,
        ...(pg ? { VRP_TEST_PG_URL: pg.url } : {}),
      },
    },
  );
  const endGroup = () => {
    try {
      if (runner.pid) process.kill(-runner.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  // Ended from outside (Ctrl-C, a CI limit): end the tests and the PostgreSQL too.
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.on(signal, () => {
      endGroup();
      stopPg();
      lanes.remove();
      process.exit(code);
    });
  }
  const watchdog = setTimeout(() => {
    const still = runningFiles(lanes.dir);
    console.error(
      `\nnpm test: the run has gone on for ${WATCHDOG_S} s (VRP_TEST_WATCHDOG) and is ended; still running: ` +
        (still.length > 0 ? still.join('; ') : '(no test file: the runner itself)'),
    );
    endGroup();
  }, WATCHDOG_S * 1000);
  const [code] = (await once(runner, 'exit')) as [number | null];
  clearTimeout(watchdog);
  // Ended by a signal (the watchdog's): a failure.
  status = code ?? 1;
  if (existsSync(times)) {
    const measured = readFileSync(times, 'utf8');
    // A run that picks tests by name ran parts of files: their times say nothing of the whole.
    if (!filtered) writeCosts(costsFile, mergeTimes(readCosts(costsFile), measured));
    if (process.env['VRP_TEST_TIMES']) appendFileSync(process.env['VRP_TEST_TIMES'], measured);
  }
  // What the shared PostgreSQL server went through, if anything: a deadlock or a crashed
  // backend fails tests in other files than the one that caused it, and a deadlock the job
  // pipeline retried past fails none, so a passing run says so too.
  const troubles = pg?.troubles() ?? [];
  if (troubles.length > 0)
    console.error(
      `\nnpm test: ${status === 0 ? 'the tests passed, but ' : ''}the tests' PostgreSQL server logged:\n${troubles.slice(-40).join('\n')}`,
    );
} finally {
  stopPg();
  lanes.remove();
}

// A process may still be on its way out (a browser's helpers end just after it): give those
// a moment before calling them left behind.
let left = leftBehind('VRP_TEST_RUN', runId);
for (let waited = 0; left.length > 0 && waited < 3000; waited += 100) {
  await new Promise((r) => setTimeout(r, 100));
  left = leftBehind('VRP_TEST_RUN', runId);
}
if (left.length > 0) {
  console.error(`\nThe tests left ${left.length} process(es) running; each test must stop what it starts:`);
  for (const p of left) {
    console.error(`  pid ${p.pid}: ${p.command}`);
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  status = status || 1;
}
process.exit(status);
