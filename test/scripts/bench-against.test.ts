import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, test } from 'node:test';
import { runToExit } from '../helpers/run-to-exit.ts';

// bench/against.ts: the bench's scenarios on another commit and on this tree, in turn, from a
// temporary worktree that is gone afterwards, whatever happened.
const worktrees = () => execFileSync('git', ['worktree', 'list', '--porcelain'], { encoding: 'utf8' });
const leftDirs = () => readdirSync(tmpdir()).filter((f) => f.startsWith('vrp-bench-against-'));

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
    const r = await runToExit(
      [
        'bench/against.ts',
        'HEAD',
        '--rounds',
        '1',
        '--',
        '--quick',
        '--only',
        'version',
        '--store',
        'sqlite',
        '--connections',
        '10',
      ],
      {},
      600_000,
    );
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    const head = execFileSync('git', ['rev-parse', '--short=7', 'HEAD'], { encoding: 'utf8' }).trim();
    assert.match(
      r.stdout,
      new RegExp(`^round 1 of 1, HEAD \\(${head}\\):\\n  SQLite, 10 conns: GET version: `, 'm'),
    );
    assert.match(r.stdout, /^round 1 of 1, this tree:\n {2}SQLite, 10 conns: GET version: /m);
    // The table's row: a ratio and a CPU figure from each tree.
    assert.match(r.stdout, /^\| SQLite, 10 conns: GET version \| 0?\.\d+ \| 0?\.\d+ \| \d+ \| \d+ \|$/m);
    assert.equal(worktrees(), before.trees);
    assert.deepEqual(leftDirs(), before.dirs);
  });
});
