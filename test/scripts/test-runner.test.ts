/**
 * `npm test` itself (scripts/test.ts), run on small fixture files: a hang ends in a failure that
 * names the file, a lane that a test left a handle open in ends, a missing tool is one line.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

const dir = mkdtempSync(join(tmpdir(), 'vrp-test-runner-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  readonly code: number | null;
  readonly output: string;
}

/** `node scripts/test.ts FILES` with `env`, on SQLite only unless `env` says otherwise. */
function runSuite(files: string[], env: Record<string, string | undefined>): Promise<Run> {
  const child = spawn(process.execPath, ['scripts/test.ts', ...files], {
    env: {
      ...process.env,
      VRP_TEST_STORES: 'sqlite',
      VRP_TEST_PG_URL: undefined,
      VRP_TEST_COSTS: join(dir, 'costs.json'),
      VRP_TEST_LANES: '1',
      // Node's test runner refuses to run files from within a test unless this is unset.
      NODE_TEST_CONTEXT: undefined,
      // Whatever the run around this one measures, this one measures only what it is told to.
      VRP_TEST_COVERAGE: undefined,
      NODE_V8_COVERAGE: undefined,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

describe('npm test (scripts/test.ts)', () => {
  test('a run that hangs is ended by the watchdog, which names the file still running, and fails', async () => {
    const run = await runSuite(['test/fixtures/runner/passes.ts', 'test/fixtures/runner/hangs.ts'], {
      VRP_TEST_WATCHDOG: '5',
    });
    assert.equal(run.code, 1, run.output);
    assert.match(
      run.output,
      /the run has gone on for 5 s \(VRP_TEST_WATCHDOG\) and is ended; still running: test\/fixtures\/runner\/hangs\.ts/,
    );
  });

  test('a lane a test left a server open in ends after its queue, names what is open, and fails', async () => {
    const run = await runSuite(['test/fixtures/runner/leaves-a-server.ts'], {});
    assert.equal(run.code, 1, run.output);
    assert.match(run.output, /its queue is done, yet \d+ handle\(s\) keep it running \([^)]*TCPServerWrap/);
    assert.match(run.output, /left something open: test\/fixtures\/runner\/leaves-a-server\.ts/);
  });

  test('missing PostgreSQL binaries: outside CI one line says so and the run goes on on SQLite', async () => {
    const run = await runSuite(['test/fixtures/runner/passes.ts'], {
      VRP_TEST_STORES: undefined,
      VRP_TEST_PG_BIN: join(dir, 'no-such-dir'),
      VRP_TEST_INSTALL: '0',
      CI: '',
    });
    assert.equal(run.code, 0, run.output);
    const lines = run.output.split('\n').filter((l) => l.startsWith('npm test: '));
    assert.deepEqual(lines, [
      'npm test: PostgreSQL server binaries (initdb, pg_ctl) is missing, so the tests on the PostgreSQL store are skipped; install: ' +
        `${process.getuid?.() === 0 ? '' : 'sudo '}apt-get install postgresql`,
    ]);
    assert.match(run.output, /ℹ pass 1\n/);
  });

  test('with VRP_TEST_COVERAGE=1 the coverage of src/ is printed, and a run below the floors fails', async () => {
    // A file that uses one function of one module of src/: far below every floor. (Node counts
    // the files a run loads; the suite loads all of src/.)
    const run = await runSuite(['test/fixtures/runner/touches-src.ts'], { VRP_TEST_COVERAGE: '1' });
    assert.equal(run.code, 1, run.output);
    assert.match(run.output, /start of coverage report/);
    assert.match(run.output, /storable-text\.ts\s*\|/);
    assert.match(run.output, /\d+(\.\d+)?% line coverage does not meet threshold of 95%/);
    const plain = await runSuite(['test/fixtures/runner/passes.ts'], {});
    assert.equal(plain.code, 0, plain.output);
    assert.doesNotMatch(plain.output, /coverage report/);
  });

  test('under CI=true a missing tool fails the run before any test', async () => {
    const run = await runSuite(['test/fixtures/runner/passes.ts'], {
      VRP_TEST_STORES: undefined,
      VRP_TEST_PG_BIN: join(dir, 'no-such-dir'),
      VRP_TEST_INSTALL: '0',
      CI: 'true',
    });
    assert.equal(run.code, 1, run.output);
    assert.match(run.output, /under CI=true no test is skipped for a missing tool/);
    assert.doesNotMatch(run.output, /ℹ pass/);
  });
});
