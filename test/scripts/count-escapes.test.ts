import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { countEscapes } from '../../scripts/count-escapes.ts';
import { runToExit } from '../helpers/run-to-exit.ts';

// Four casts (one of them `<T>x`, and `as unknown as T` is two) and three non-null assertions;
// `as const`, `satisfies`, `!==`, `!x` and the words in strings and comments are none.
const FIXTURE = `
const a = JSON.parse('1') as number;
const b = <string>JSON.parse('"x"');
const c = JSON.parse('{}') as unknown as { n: number };
const d = ['x', 'y'] as const;
const e = { n: 1 } satisfies { n: number };
const f = [1, 2][0]!;
const g = new Map<string, number[]>().get('k')!.at(0)!;
const h = a !== 1 && !b ? 'x as string' : 'y!'; // z as number, w!
export { a, b, c, d, e, f, g, h };
`;

describe('the escape hatches counted (scripts/count-escapes.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-count-escapes-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'sub', 'fixture.ts'), FIXTURE);
  writeFileSync(join(dir, 'clean.ts'), 'export const x = 1 as const;\n');
  writeFileSync(join(dir, 'one.ts'), 'export const y = [1][0]!;\n');
  writeFileSync(join(dir, 'not-typescript.js'), 'const z = y as number;\n');

  test('casts other than `as const` and non-null assertions, and nothing else', () => {
    assert.deepEqual(countEscapes('f.ts', FIXTURE), { file: 'f.ts', casts: 4, nonNull: 3 });
  });

  test('a tree: the totals and the files with the most, and exit 1 only above a ceiling', async () => {
    const script = 'scripts/count-escapes.ts';
    const within = await runToExit([script, dir, '--max-casts', '4', '--max-non-null', '4'], {});
    assert.equal(within.code, 0, within.stdout + within.stderr);
    const lines = within.stdout.trim().split('\n');
    assert.deepEqual(lines, [
      `3 files in ${dir}: 4 casts, 4 non-null assertions`,
      'casts non-null  file',
      `    4     3  ${join(dir, 'sub', 'fixture.ts')}`,
      `    0     1  ${join(dir, 'one.ts')}`,
    ]);

    const above = await runToExit([script, dir, '--max-casts', '3', '--max-non-null', '3', '--top', '1'], {});
    assert.equal(above.code, 1);
    assert.match(above.stdout, /too many casts: 4 > 3/);
    assert.match(above.stdout, /too many non-null assertions: 4 > 3/);
    assert.doesNotMatch(above.stdout, /one\.ts/, '--top 1 lists one file');

    const bad = await runToExit([script, dir, '--max-casts', 'many'], {});
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--max-casts needs a whole number/);
  });
});
