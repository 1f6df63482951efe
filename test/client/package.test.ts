/**
 * The SDK as a package: its types are what the generator makes of docs/openapi.json now (no
 * drift), and it compiles under its own strict tsconfig (DOM and ES only: no Node types, so
 * that it runs in browsers too) with 0 errors.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { GENERATED_PATH, renderTypes } from '../../client/scripts/generate-types.ts';

const root = new URL('../../', import.meta.url);

test('client/src/generated/openapi.ts is what `npm run sdk:types` makes of docs/openapi.json', async () => {
  const checkedIn = readFileSync(new URL(GENERATED_PATH, root), 'utf8');
  assert.ok(checkedIn === (await renderTypes()), 'the generated types drifted: run `npm run sdk:types`');
});

test('the client compiles with 0 errors under client/tsconfig.json (strict)', () => {
  const tsc = fileURLToPath(new URL('node_modules/typescript/bin/tsc', root));
  // Incremental: tsc keeps what it learnt of unchanged files (.tmp/, not in the repository) and
  // checks again what changed, at half the CPU time when nothing did.
  const buildInfo = fileURLToPath(new URL('.tmp/client.tsbuildinfo', root));
  const run = spawnSync(
    process.execPath,
    [tsc, '--noEmit', '-p', 'client', '--incremental', '--tsBuildInfoFile', buildInfo],
    {
      cwd: fileURLToPath(root),
      encoding: 'utf8',
    },
  );
  assert.equal(run.status, 0, run.stdout + run.stderr);
});

test('the package exports its built entry and types, with no runtime dependencies', () => {
  const pkg = JSON.parse(readFileSync(new URL('client/package.json', root), 'utf8'));
  assert.equal(pkg.type, 'module');
  assert.deepEqual(pkg.exports['.'], { types: './dist/index.d.ts', default: './dist/index.js' });
  assert.equal(pkg.dependencies, undefined);
  assert.match(pkg.scripts.build, /^tsc /);
});
