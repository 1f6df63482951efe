/**
 * The build (scripts/build.ts): src/ as JavaScript in dist/, which every launcher runs, and the
 * check that refuses a dist/ older than its src/ (src/source-digest.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { build, toJavaScript } from '../../scripts/build.ts';
import { ExpectedFailure } from '../../src/expected-failure.ts';
import { API, CONSOLE } from '../../src/http/base-path.ts';
import { BUILD_DIGEST_FILE, checkBuildIsCurrent } from '../../src/source-digest.ts';
import { SERVER_PROGRAM, serverProgram, startServer } from '../helpers/server-process.ts';

const root = resolve(import.meta.dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'vrp-build-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The offsets of the line ends of a text. */
const lineEnds = (text: string) => [...text.matchAll(/\n/g)].map((m) => m.index);

test('every module of src/ keeps its length and its lines when built: a stack trace names the same places', () => {
  const modules = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.ts'),
  );
  assert.ok(modules.length > 100, `only ${modules.length} modules found`);
  for (const file of modules) {
    const source = readFileSync(join(root, 'src', file), 'utf8');
    const js = toJavaScript(source, file);
    assert.equal(js.length, source.length, file);
    assert.deepEqual(lineEnds(js), lineEnds(source), file);
    assert.doesNotMatch(
      js,
      /\b(from|import)\s*\(?\s*['"]\.{1,2}\/[^'"]*\.ts['"]/,
      `${file}: an import of .ts left`,
    );
  }
});

test('types are blanked and relative imports of .ts become .js; other specifiers and strings stay', () => {
  const source = [
    "import type { A } from './a.ts';",
    "import { b, type B } from '../b/b.ts';",
    "export { c } from './c.ts';",
    "import './side.ts';",
    "const d = await import('./d.ts');",
    "import pg from 'pg';",
    "const note: string = 'main.ts';",
    'export function f(x: number): B { return x as unknown as B; }',
  ].join('\n');
  assert.equal(
    toJavaScript(source, 'x.ts'),
    [
      '                                ',
      "import { b,        } from '../b/b.js';",
      "export { c } from './c.js';",
      "import './side.js';",
      "const d = await import('./d.js');",
      "import pg from 'pg';",
      "const note         = 'main.ts';",
      'export function f(x        )    { return x                ; }',
    ].join('\n'),
  );
});

test('an import() of a computed specifier is refused: the build could not make it name the .js', () => {
  assert.throws(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source under test holds a template literal
    () => toJavaScript('const m = await import(`./${name}.ts`);', 'y.ts'),
    /y\.ts: import\(\) of a computed specifier/,
  );
  assert.throws(() => toJavaScript('const m = await import(name);', 'y.ts'), /computed specifier/);
});

test('a build writes what changed, removes what src/ no longer has, copies assets, and records its source', () => {
  const src = join(scratch, 'tree', 'src');
  const out = join(scratch, 'tree', 'dist');
  mkdirSync(join(src, 'assets'), { recursive: true });
  writeFileSync(
    join(src, 'main.ts'),
    "import { two } from './two.ts';\nexport const one: number = two - 1;\n",
  );
  writeFileSync(join(src, 'two.ts'), 'export const two = 2;\n');
  writeFileSync(join(src, 'assets', 'style.css'), 'body { margin: 0 }\n');

  assert.deepEqual(build(src, out), { written: 3, removed: 0 });
  assert.equal(
    readFileSync(join(out, 'main.js'), 'utf8'),
    "import { two } from './two.js';\nexport const one         = two - 1;\n",
  );
  assert.equal(readFileSync(join(out, 'assets', 'style.css'), 'utf8'), 'body { margin: 0 }\n');
  const digest = readFileSync(join(out, BUILD_DIGEST_FILE), 'utf8');

  // Nothing changed: nothing written, not even touched.
  const before = statSync(join(out, 'two.js')).mtimeMs;
  assert.deepEqual(build(src, out), { written: 0, removed: 0 });
  assert.equal(statSync(join(out, 'two.js')).mtimeMs, before);

  // One module changed, one gone.
  writeFileSync(join(src, 'main.ts'), 'export const one = 1;\n');
  rmSync(join(src, 'two.ts'));
  assert.deepEqual(build(src, out), { written: 1, removed: 1 });
  assert.deepEqual(readdirSync(out, { recursive: true, encoding: 'utf8' }).sort(), [
    BUILD_DIGEST_FILE,
    'assets',
    'assets/style.css',
    'main.js',
  ]);
  assert.notEqual(readFileSync(join(out, BUILD_DIGEST_FILE), 'utf8'), digest);
});

test('a dist/ not built from the src/ beside it is refused; a current one, or one with no src/, is not', () => {
  const src = join(scratch, 'checkout', 'src');
  const out = join(scratch, 'checkout', 'dist');
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'main.ts'), 'export const served = true;\n');
  build(src, out);
  const main = pathToFileURL(join(out, 'main.js')).href;
  checkBuildIsCurrent(main);

  writeFileSync(join(src, 'main.ts'), 'export const served = false;\n');
  assert.throws(
    () => checkBuildIsCurrent(main),
    (err: unknown) =>
      err instanceof ExpectedFailure &&
      /was not built from the code in .*src \(changed since\): run `npm run build`/.test(err.message),
  );
  build(src, out);
  checkBuildIsCurrent(main);

  // A file added to src/ counts too, and so does a dist/ whose record is gone.
  writeFileSync(join(src, 'more.ts'), 'export {};\n');
  assert.throws(() => checkBuildIsCurrent(main), ExpectedFailure);
  build(src, out);
  rmSync(join(out, BUILD_DIGEST_FILE));
  assert.throws(() => checkBuildIsCurrent(main), ExpectedFailure);

  // No src/ beside it (an image that ships only the build), or not a dist/ at all: nothing to compare.
  rmSync(src, { recursive: true });
  checkBuildIsCurrent(main);
  checkBuildIsCurrent(pathToFileURL(join(root, 'src', 'main.ts')).href);
});

test('the server refuses to start from a dist/ older than its src/, with one line saying what to run', () => {
  // A copy of the project's src/, built, then changed: what `git checkout` without a build leaves.
  const checkout = join(scratch, 'stale');
  mkdirSync(checkout);
  spawnSync('cp', ['-r', join(root, 'src'), join(checkout, 'src')]);
  spawnSync('ln', ['-s', join(root, 'node_modules'), join(checkout, 'node_modules')]);
  spawnSync('cp', [join(root, 'package.json'), checkout]);
  build(join(checkout, 'src'), join(checkout, 'dist'));
  writeFileSync(
    join(checkout, 'src', 'main.ts'),
    `${readFileSync(join(checkout, 'src', 'main.ts'), 'utf8')}\n`,
  );
  const r = spawnSync(process.execPath, [join(checkout, 'dist', 'main.js')], {
    env: { ...process.env, VRP_DATA_DIR: join(checkout, 'data'), VRP_PORT: '0' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 1, r.stderr);
  assert.match(
    r.stderr,
    /^vrp: .*dist was not built from the code in .*src \(changed since\): run `npm run build` there, then start again\n$/,
  );
});

test('the built server serves as the source does: the API, and the console with its assets', async () => {
  const data = join(scratch, 'served');
  const server = await startServer({ VRP_DATA_DIR: data }, undefined, undefined, serverProgram());
  try {
    assert.deepEqual(server.child.spawnargs.slice(-1), [SERVER_PROGRAM]);
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
    const version = await fetch(`${server.url}${API}/version`);
    assert.equal(version.status, 401);
    assert.equal(((await version.json()) as { error_code?: string }).error_code, 'invalid_token');
    const css = await fetch(`${server.url}${CONSOLE}/assets/console.css`);
    assert.equal(css.status, 200);
    assert.equal(
      await css.text(),
      readFileSync(join(root, 'src', 'http', 'console', 'assets', 'console.css'), 'utf8'),
    );
  } finally {
    assert.equal(await server.stop(), 0, server.output());
  }
});
