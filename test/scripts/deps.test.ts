import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs');

/** `depcruise src` with the project's rules, in `cwd`, as `npm run deps` runs it. */
function cruise(cwd: string) {
  const r = spawnSync(process.execPath, [DEPCRUISE, 'src', '--config', CONFIG], { cwd, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('the import rules (npm run deps, .dependency-cruiser.cjs)', () => {
  test('src/ keeps them: no cycle, no import against the layers', () => {
    const r = cruise(ROOT);
    assert.equal(r.status, 0, r.output);
    assert.match(r.output, /no dependency violations found/);
  });

  describe('a tree that breaks them fails, naming each rule broken', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vrp-deps-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    write(
      'tsconfig.json',
      JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true } }),
    );
    // store/ imports jobs/ (a higher layer), and jobs/ imports it back by type only: a cycle.
    write('src/store/repo.ts', "import { run } from '../jobs/worker.ts';\nexport const go = () => run();\n");
    write(
      'src/jobs/worker.ts',
      "import type { go } from '../store/repo.ts';\nexport const run = (): ReturnType<typeof go> | undefined => undefined;\n",
    );
    // A console page imports an operator route file for a payload.
    write('src/http/operator/hosts.ts', 'export const HostPayload = {};\n');
    write(
      'src/http/console/pages/hosts.ts',
      "import { HostPayload } from '../../operator/hosts.ts';\nexport const p = HostPayload;\n",
    );
    // A module that belongs to no layer.
    write('src/stray.ts', "import { go } from './store/repo.ts';\nexport const s = go;\n");
    const r = cruise(dir);

    test('the check exits non-zero', () => assert.notEqual(r.status, 0, r.output));
    test('a cycle, even of a type-only import', () =>
      assert.match(r.output, /no-circular: src\/(store\/repo|jobs\/worker)\.ts/));
    test('an import from a lower layer to a higher one', () =>
      assert.match(r.output, /layer-store-imports-upward: src\/store\/repo\.ts → src\/jobs\/worker\.ts/));
    test('a payload taken from a route file', () =>
      assert.match(r.output, /route-imports-a-route-file: src\/http\/console\/pages\/hosts\.ts/));
    test('a module in no layer', () => assert.match(r.output, /every-module-in-a-layer: src\/stray\.ts/));
  });
});
