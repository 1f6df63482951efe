/**
 * `--heap-profile` (bench/heap-sampling.ts) and its summary (bench/profile-summary.ts): where a
 * process allocates, the objects the collector has already taken included.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { build } from '../../scripts/build.ts';
import { ownDataDir } from '../helpers/cli.ts';
import { runToExit } from '../helpers/run-to-exit.ts';

test('the allocation sampler counts what was collected, and the summary names the function that allocated it', async (t) => {
  const dir = ownDataDir(t, 'vrp-heap-profile-');
  // 64 MiB of short-lived arrays from one named function (none kept: collected as it goes),
  // and 1 MiB kept from another.
  const program = join(dir, 'allocate.mjs');
  const profiles = join(dir, 'profiles');
  writeFileSync(
    program,
    [
      'function makeGarbage() { let n = 0; for (let i = 0; i < 16384; i++) n += new Array(512).fill(i).length; return n; }',
      'function keepSome() { const kept = []; for (let i = 0; i < 256; i++) kept.push(new Array(512).fill(i)); return kept; }',
      'globalThis.kept = keepSome();',
      'console.log(makeGarbage());',
    ].join('\n'),
  );
  const run = await runToExit(['--import', './bench/heap-sampling.ts', program], {
    // A directory not made yet: the sampler makes it.
    VRP_BENCH_HEAP_PROFILE: profiles,
  });
  assert.equal(run.code, 0, run.stderr);
  const files = readdirSync(profiles).filter((f) => f.endsWith('.heapprofile'));
  assert.equal(files.length, 1, `one profile written: ${readdirSync(profiles).join(', ')}`);

  const summary = await runToExit(['bench/profile-summary.ts', join(profiles, files[0]!), '10'], {});
  assert.equal(summary.code, 0, summary.stderr);
  assert.match(summary.stdout, /MiB allocated sampled/);
  const self = summary.stdout.split('\nself bytes:\n')[1]!.split('\n\n')[0]!.split('\n');
  const share = (fn: string) => {
    const line = self.find((l) => l.includes(`${fn} `));
    assert.ok(line, `${fn} among the top allocators:\n${self.join('\n')}`);
    return Number(/([\d.]+)%/.exec(line)![1]);
  };
  // The collected garbage outweighs what is kept: a profile of survivors would show the reverse.
  assert.ok(share('makeGarbage') > 5 * share('keepSome'), summary.stdout);
});

test("a profile of the bundle names the source's functions and lines, by the bundle's source maps", async (t) => {
  const dir = ownDataDir(t, 'vrp-heap-profile-');
  const src = join(dir, 'tree', 'src');
  mkdirSync(src, { recursive: true });
  const source = [
    "import { spare } from './spare.ts';",
    'function makeGarbage(): number {',
    '  let n = 0;',
    '  for (let i = 0; i < 16384; i++) n += new Array(512).fill(i).length;',
    '  return n;',
    '}',
    'console.log(makeGarbage() + spare);',
    '',
  ].join('\n');
  writeFileSync(join(src, 'main.ts'), source);
  // Another module before it in the bundle, so that no line of the bundle is the source's.
  writeFileSync(join(src, 'spare.ts'), `export const spare: number = 1;\n${'// padding\n'.repeat(40)}`);
  await build(src, join(dir, 'tree', 'dist'));
  const profiles = join(dir, 'profiles');
  const run = await runToExit(
    ['--import', './bench/heap-sampling.ts', join(dir, 'tree', 'dist', 'main.js')],
    {
      VRP_BENCH_HEAP_PROFILE: profiles,
    },
  );
  assert.equal(run.code, 0, run.stderr);
  const file = readdirSync(profiles).find((f) => f.endsWith('.heapprofile'));
  assert.ok(file);
  const summary = await runToExit(['bench/profile-summary.ts', join(profiles, file), '10'], {});
  assert.equal(summary.code, 0, summary.stderr);
  const project = summary.stdout.split('project functions')[1]!.split('\n\n')[0]!;
  // Line 2 of the source, where makeGarbage is declared; the bundle has it lower down.
  assert.match(project, /makeGarbage \S*\/tree\/src\/main\.ts:2$/m);
  assert.doesNotMatch(project, /dist\//);
});
