import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { figuresOf } from '../../bench/against-figures.ts';
import { runToExit } from '../helpers/run-to-exit.ts';

// bench/against.ts: the bench's scenarios on another commit and on this tree, in turn, from a
// temporary worktree that is gone afterwards, whatever happened.
const worktrees = () => execFileSync('git', ['worktree', 'list', '--porcelain'], { encoding: 'utf8' });
const leftDirs = () => readdirSync(tmpdir()).filter((f) => f.startsWith('vrp-bench-against-'));

/** One round of `bench/against.ts` against `revision`, with these bench options. */
const oneRound = (revision: string, ...bench: string[]) =>
  runToExit(['bench/against.ts', revision, '--rounds', '1', '--', ...bench], {}, 600_000);
/** The cheapest scenario: GET version, SQLite, 10 connections. */
const VERSION_AT_10 = ['--quick', '--only', 'version', '--store', 'sqlite', '--connections', '10'];

/**
 * A commit made for the test and referenced by no branch: HEAD with a bench/run.ts that knows no
 * `--cold` (the option renamed), as a bench from before order -> running's warm-up round does
 * not. Written with a throwaway index, so that the checkout, its index and its branches stay as
 * they are, and it needs no history before HEAD (a shallow clone has none).
 */
function commitWithoutCold(): string {
  const bench = readFileSync('bench/run.ts', 'utf8').replaceAll(/\bcold\b/g, 'c0ld');
  assert.ok(!bench.includes('--cold'));
  const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], {
    input: bench,
    encoding: 'utf8',
  }).trim();
  const index = join(tmpdir(), `vrp-test-index-${process.pid}`);
  const env = { ...process.env, GIT_INDEX_FILE: index };
  try {
    execFileSync('git', ['read-tree', 'HEAD'], { env });
    execFileSync('git', ['update-index', '--cacheinfo', `100644,${blob},bench/run.ts`], { env });
    const tree = execFileSync('git', ['write-tree'], { env, encoding: 'utf8' }).trim();
    return execFileSync(
      'git',
      [
        '-c',
        'user.name=test',
        '-c',
        'user.email=test@localhost',
        'commit-tree',
        tree,
        '-p',
        'HEAD',
        '-m',
        'no --cold',
      ],
      { encoding: 'utf8' },
    ).trim();
  } finally {
    rmSync(index, { force: true });
  }
}

describe('bench/against.ts', () => {
  test('a mistake: one line with the usage, exit 2, and no worktree made or left', async () => {
    const before = { trees: worktrees(), dirs: leftDirs() };
    const cases = [
      [['--', '--only', 'version'], 'name one REVISION'],
      [
        ['HEAD', '--rounds', '0', '--', '--only', 'version'],
        '--rounds is a whole number of at least 1, not 0',
      ],
      [['HEAD', '--', '--quick'], 'the bench options need --only (neither tree writes RESULTS.md)'],
      [['no-such-revision-x', '--', '--only', 'version'], 'no commit no-such-revision-x in this repository'],
      [
        ['HEAD', '--patch', 'no-such-commit-y', '--', '--only', 'version'],
        'no commit no-such-commit-y in this repository',
      ],
    ] as const;
    const runs = await Promise.all(
      cases.map(async ([args, said]) => ({
        args,
        said,
        r: await runToExit(['bench/against.ts', ...args], {}),
      })),
    );
    for (const { args, said, r } of runs) {
      const what = `${args.join(' ')}: ${r.stdout}${r.stderr}`;
      assert.equal(r.code, 2, what);
      const [first, second] = r.stderr.split('\n');
      assert.equal(first, `bench/against: ${said}`, what);
      assert.match(second ?? '', /^usage: node bench\/against\.ts REVISION/, what);
      assert.doesNotMatch(r.stderr, /\n\s+at /, what);
    }
    assert.equal(worktrees(), before.trees);
    assert.deepEqual(leftDirs(), before.dirs);
  });

  test("a run: each round's figures from both trees, a table of them, and the worktree gone", async () => {
    const before = { trees: worktrees(), dirs: leftDirs() };
    const r = await oneRound('HEAD', ...VERSION_AT_10);
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    const head = execFileSync('git', ['rev-parse', '--short=7', 'HEAD'], { encoding: 'utf8' }).trim();
    assert.match(
      r.stdout,
      new RegExp(`^round 1 of 1, HEAD \\(${head}\\):\\n  SQLite, 10 conns: GET version: `, 'm'),
    );
    assert.match(r.stdout, /^round 1 of 1, this tree:\n {2}SQLite, 10 conns: GET version: /m);
    // The table's row: a ratio and a CPU figure from each tree.
    // A ratio can pass 1 when the machine is loaded unevenly between the two.
    assert.match(r.stdout, /^\| SQLite, 10 conns: GET version \| \d*\.\d+ \| \d*\.\d+ \| \d+ \| \d+ \|$/m);
    assert.equal(worktrees(), before.trees);
    assert.deepEqual(leftDirs(), before.dirs);
  });

  test("against a bench with no warm-up round: this tree's bench is given --cold, and REVISION's never", async () => {
    const before = { trees: worktrees(), dirs: leftDirs() };
    const old = commitWithoutCold();
    const label = `${old} \\(${old.slice(0, 7)}\\)`;
    const bench = VERSION_AT_10.join(' ');
    // Without --cold: this tree's order -> running would be measured cold, as REVISION's is.
    const plain = await oneRound(old, ...VERSION_AT_10);
    assert.equal(plain.code, 0, `${plain.stdout}${plain.stderr}`);
    assert.match(plain.stdout, new RegExp(`^${label} runs: node bench/run.ts ${bench}$`, 'm'));
    assert.match(plain.stdout, new RegExp(`^this tree runs: node bench/run.ts ${bench} --cold$`, 'm'));
    // With --cold: this tree keeps it, REVISION's bench (whose options would refuse it) is not given it.
    const cold = await oneRound(old, ...VERSION_AT_10, '--cold');
    assert.equal(cold.code, 0, `${cold.stdout}${cold.stderr}`);
    assert.match(cold.stdout, new RegExp(`^${label} runs: node bench/run.ts ${bench}$`, 'm'));
    assert.match(cold.stdout, new RegExp(`^this tree runs: node bench/run.ts ${bench} --cold$`, 'm'));
    assert.match(cold.stdout, /^\| SQLite, 10 conns: GET version \| \d*\.\d+ \| \d*\.\d+ \| \d+ \| \d+ \|$/m);
    assert.equal(worktrees(), before.trees);
    assert.deepEqual(leftDirs(), before.dirs);
  });
});

test("the figures set side by side: a request scenario's ratio and CPU, a pipeline's rate and CPU, the peak RSS, a list's slowdown", () => {
  const output = [
    'PostgreSQL for tests at postgres://x',
    'SQLite, 10 conns: GET status, random one of 1,000 services: 13352 req/s (runs 11918, 14786), floor 24596 (runs 26201, 22991), ratio 0.543, p50/p99 0 / 2 ms, RSS 180 MB, CPU µs/request user+sys: server 53+19, floor 19+13',
    "SQLite, one process: order -> running: 500/500 running in 1.09 s (all accepted at 1.06 s): 461 services/s, server CPU 1920 µs per service; the bench's own 1424 µs",
    'SQLite: peak RSS under status load: 166 MB',
    'SQLite, 10 conns: operator services search by domain substring, first page of 100: 100,000 vs 1,000 services (two servers loaded in turn: 1713 vs 940 req/s): slowdown 1.823x, p50 / p99 11 / 17 ms',
    '(--only: bench/RESULTS.md not written; 115 s)',
  ].join('\n');
  assert.deepEqual(figuresOf(output), [
    { scenario: 'SQLite, 10 conns: GET status, random one of 1,000 services', rate: '0.543', cpu: '72' },
    { scenario: 'SQLite, one process: order -> running', rate: '461/s', cpu: '1920' },
    { scenario: 'SQLite: peak RSS under status load', rate: '166 MB', cpu: undefined },
    {
      scenario: 'SQLite, 10 conns: operator services search by domain substring, first page of 100',
      rate: '1.823x (1713 vs 940 req/s)',
      cpu: undefined,
    },
  ]);
});
