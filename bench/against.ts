/**
 * The bench's scenarios on another commit and on this tree, in turn: the way to tell what a
 * change did on a shared machine whose speed drifts by more than most changes move
 * (bench/FINDINGS.md measures each change so).
 *
 *   node bench/against.ts REVISION [--rounds 3] [--patch COMMIT,...] -- BENCH OPTIONS
 *
 * REVISION is checked out into a temporary git worktree (removed at the end, also after a
 * failure or ^C) that uses this tree's node_modules; `--patch` applies commits to it first
 * without committing (a bench fix the old commit lacks, such as the address pool of
 * order -> running). Then `bench/run.ts BENCH OPTIONS` runs there and here, REVISION first,
 * `--rounds` times. BENCH OPTIONS must hold `--only` (neither tree writes RESULTS.md). Each
 * scenario's headline figures (services/s or the ratio to the floor, and the server's CPU per
 * service or per request) are printed per run, REVISION's beside this tree's, with their
 * medians: compare CPU first, it is the steadier figure.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type Figures, figuresOf, SCENARIO_LINE } from './against-figures.ts';
import { median } from './report.ts';

const USAGE = `usage: node bench/against.ts REVISION [--rounds N] [--patch COMMIT,...] -- BENCH OPTIONS
  REVISION            a commit (any git revision) to run beside this tree
  --rounds N          runs of each, in turn, REVISION first (default 3)
  --patch LIST        commits applied to REVISION's checkout first, not committed
  BENCH OPTIONS       bench/run.ts's options, --only among them (npm run bench -- --help)`;

function usageError(message: string): never {
  console.error(`bench/against: ${message}\n${USAGE}`);
  process.exit(2);
}

const root = resolve(import.meta.dirname, '..');
const split = process.argv.indexOf('--');
const own = split < 0 ? process.argv.slice(2) : process.argv.slice(2, split);
const benchArgs = split < 0 ? [] : process.argv.slice(split + 1);
const { values, positionals } = (() => {
  try {
    return parseArgs({
      args: own,
      allowPositionals: true,
      options: {
        help: { type: 'boolean', default: false },
        rounds: { type: 'string', default: '3' },
        patch: { type: 'string', default: '' },
      },
    });
  } catch (err) {
    return usageError(err instanceof Error ? err.message : String(err));
  }
})();
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (positionals.length !== 1) usageError('name one REVISION');
const revision = positionals[0]!;
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1)
  usageError(`--rounds is a whole number of at least 1, not ${values.rounds}`);
if (!benchArgs.includes('--only'))
  usageError('the bench options need --only (neither tree writes RESULTS.md)');
const patches = values.patch!.split(',').filter(Boolean);

/** git in this tree (or `cwd`), its output; a failure is one line and exit 2. */
function git(args: string[], cwd = root): string {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) usageError(`git ${args.join(' ')}: ${(r.stderr || r.stdout).trim().split('\n')[0]}`);
  return r.stdout.trim();
}

/** The commit a revision names; one that names none is a mistake of the command line. */
function commitOf(name: string): string {
  const r = spawnSync('git', ['rev-parse', '--verify', '--quiet', `${name}^{commit}`], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) usageError(`no commit ${name} in this repository`);
  return r.stdout.trim();
}

const commit = commitOf(revision);
for (const p of patches) commitOf(p);
if (git(['rev-parse', `${commit}:package-lock.json`]) !== git(['hash-object', 'package-lock.json']))
  console.error(
    `bench/against: ${revision}'s package-lock.json differs from this tree's; it runs with this tree's node_modules`,
  );

const tree = mkdtempSync(join(tmpdir(), 'vrp-bench-against-'));
let removed = false;
function removeTree(): void {
  if (removed) return;
  removed = true;
  // The link first, so that nothing under it can be taken for the worktree's own files.
  rmSync(join(tree, 'node_modules'), { force: true });
  spawnSync('git', ['worktree', 'remove', '--force', tree], { cwd: root });
  rmSync(tree, { recursive: true, force: true });
  spawnSync('git', ['worktree', 'prune'], { cwd: root });
}
process.once('exit', removeTree);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    removeTree();
    process.exit(130);
  });

git(['worktree', 'add', '--detach', '--force', tree, commit]);
for (const p of patches) git(['cherry-pick', '--no-commit', p], tree);
symlinkSync(join(root, 'node_modules'), join(tree, 'node_modules'), 'dir');

/**
 * A bench from before order -> running's warm-up round (2026-12-01) measures a server's first
 * round; this tree's then runs with `--cold` too, so that the two measure the same thing (and
 * REVISION's is never given the option it does not know).
 */
const theirsCold = !readFileSync(join(tree, 'bench', 'run.ts'), 'utf8').includes('--cold');
const argsIn = (cwd: string) =>
  cwd === tree
    ? benchArgs.filter((a) => !theirsCold || a !== '--cold')
    : theirsCold && !benchArgs.includes('--cold')
      ? [...benchArgs, '--cold']
      : benchArgs;
if (theirsCold && benchArgs.includes('--only') && /running/.test(benchArgs.join(' ')))
  console.log(`${revision}'s bench has no warm-up round for order -> running: this tree's runs with --cold`);

function benchIn(cwd: string): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['bench/run.ts', ...argsIn(cwd)], {
      cwd,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      output += d;
    });
    child.once('error', fail);
    child.once('close', (code) =>
      code === 0 ? done(output) : fail(new Error(`bench/run.ts in ${cwd} exited with ${code}:\n${output}`)),
    );
  });
}

const runs: { theirs: Figures[][]; ours: Figures[][] } = { theirs: [], ours: [] };
const label = `${revision} (${commit.slice(0, 7)}${patches.length ? ` + ${patches.join(', ')}` : ''})`;
// What each tree runs, as it runs it (with --cold given or held back: above).
console.log(`${label} runs: node bench/run.ts ${argsIn(tree).join(' ')}`);
console.log(`this tree runs: node bench/run.ts ${argsIn(root).join(' ')}`);
for (let r = 1; r <= rounds; r++) {
  for (const [who, cwd, list] of [
    [label, tree, runs.theirs],
    ['this tree', root, runs.ours],
  ] as const) {
    const output = await benchIn(cwd);
    console.log(`round ${r} of ${rounds}, ${who}:`);
    for (const line of output.split('\n')) if (SCENARIO_LINE.test(line)) console.log(`  ${line}`);
    list.push(figuresOf(output));
  }
}

const cell = (list: Figures[][], scenario: string, key: 'rate' | 'cpu') => {
  const xs = list.map((run) => run.find((f) => f.scenario === scenario)?.[key]);
  const numbers = xs.map((x) => Number.parseFloat(x ?? '')).filter(Number.isFinite);
  return `${xs.map((x) => x ?? '-').join(', ')}${numbers.length > 1 ? ` (median ${+median(numbers).toFixed(3)})` : ''}`;
};
const scenarios = [...new Set([...runs.theirs, ...runs.ours].flat().map((f) => f.scenario))];
console.log(
  `\n| scenario | ${label}: rate | this tree: rate | ${label}: server CPU µs | this tree: server CPU µs |`,
);
console.log('|---|---|---|---|---|');
for (const s of scenarios)
  console.log(
    `| ${s} | ${cell(runs.theirs, s, 'rate')} | ${cell(runs.ours, s, 'rate')} | ${cell(runs.theirs, s, 'cpu')} | ${cell(runs.ours, s, 'cpu')} |`,
  );
console.log(
  "\nrate: services/s, the ratio to the floor of the same run, the peak RSS, or a list's slowdown with the large store (the small store's rate vs the large one's); CPU per service or per request.",
);
