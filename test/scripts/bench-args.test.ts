import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runToExit } from '../helpers/run-to-exit.ts';

// The bench's command line: its mistakes are one line and the usage, never a stack trace, and
// nothing is started (no server, no store) before they are found.
describe("the bench's command line (bench/run.ts)", () => {
  test('--help prints the options and the scenarios, and exits 0', async () => {
    const r = await runToExit(['bench/run.ts', '--help'], {});
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^usage: npm run bench/);
    for (const option of [
      '--quick',
      '--only',
      '--store',
      '--connections',
      '--profile',
      '--heap-profile',
      '--sql-timings',
    ])
      assert.ok(r.stdout.includes(option), option);
    assert.match(r.stdout, /token, version, products, status, details, order, running/);
  });

  test('a mistake: what is wrong in one line, with the usage, exit 2, no stack trace', async () => {
    const cases = [
      [['--bogus'], "Unknown option '--bogus'"],
      [['--only', 'version,nope'], 'unknown scenario nope'],
      [['--store', 'mysql'], '--store is sqlite, postgres or both, not mysql'],
      [['--connections', '10,0'], '--connections is a list of whole numbers of at least 1, not 10,0'],
    ] as const;
    // At once: each process spends most of its time loading the bench's modules.
    const runs = await Promise.all(
      cases.map(async ([args, said]) => ({ args, said, r: await runToExit(['bench/run.ts', ...args], {}) })),
    );
    for (const { args, said, r } of runs) {
      const what = `${args.join(' ')}: ${r.stdout}${r.stderr}`;
      assert.equal(r.code, 2, what);
      const [first, second] = r.stderr.split('\n');
      assert.equal(first, `bench: ${said}`, what);
      assert.match(second ?? '', /^usage: npm run bench/, what);
      assert.doesNotMatch(r.stderr, /\n\s+at /, what);
      assert.equal(r.stdout, '', what);
    }
  });
});
