/**
 * `npm test`: the whole suite with Node's test runner, on SQLite and on a throwaway
 * PostgreSQL that this script starts and stops (VRP_TEST_STORES=sqlite skips it).
 * Arguments narrow it: `npm test -- test/http` runs one folder, flags pass through
 * (`npm test -- --test-name-pattern=oauth`).
 *
 * Every process the tests start carries VRP_TEST_RUN in its environment. A test that leaves
 * one behind (a server, a worker, a PostgreSQL, any child) fails the run: it is named and ended.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, globSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { type PostgresServer, startPostgres } from './postgres.ts';
import { leftBehind } from './processes.ts';
import { mergeTimes, readCosts, runOrder, writeCosts } from './test-costs.ts';
import { writeLanes } from './test-lanes.ts';

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

let pg: PostgresServer | undefined;
if (process.env['VRP_TEST_STORES'] !== 'sqlite' && !process.env['VRP_TEST_PG_URL']) {
  pg = await startPostgres();
  console.log(`PostgreSQL for tests at ${pg.url}`);
}
const stopPg = () => pg?.stop();
process.on('SIGINT', () => {
  stopPg();
  process.exit(130);
});

// Node keeps what it compiled (our TypeScript after type stripping, the dependencies) here, so
// the lanes and every server or CLI process a test starts skip most of that work:
// about a third of a process start. Safe to share: entries are keyed by the source's content.
const compileCache = process.env['NODE_COMPILE_CACHE'] || resolve('.tmp/compile-cache');

const runId = randomUUID();
// Flags that select tests by name or `only` (scripts/test-lane.ts says why lanes need to know).
const filtered = flags.some((f) => /^--test-(name-pattern|skip-pattern|only)\b/.test(f));
// In the order the last run's costs suggest (scripts/test-costs.ts).
const costsFile = resolve('.tmp/test-times.json');
const lanes = writeLanes(runOrder(files, readCosts(costsFile)), LANES, filtered);
// Where the lanes write each file's times (scripts/test-lane.ts); VRP_TEST_TIMES gets a copy.
const times = join(lanes.dir, 'times');
let status = 1;
try {
  const result = spawnSync(
    process.execPath,
    ['--test', `--test-concurrency=${LANES}`, '--test-timeout=300000', ...flags, ...lanes.paths],
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        NODE_ENV: 'test',
        NODE_COMPILE_CACHE: compileCache,
        VRP_TEST_RUN: runId,
        VRP_TEST_TIMES: times,
        ...(pg ? { VRP_TEST_PG_URL: pg.url } : {}),
      },
    },
  );
  status = result.status ?? 1;
  if (existsSync(times)) {
    const measured = readFileSync(times, 'utf8');
    // A run that picks tests by name ran parts of files: their times say nothing of the whole.
    if (!filtered) writeCosts(costsFile, mergeTimes(readCosts(costsFile), measured));
    if (process.env['VRP_TEST_TIMES']) appendFileSync(process.env['VRP_TEST_TIMES'], measured);
  }
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
