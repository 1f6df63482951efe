/**
 * The build (scripts/build.ts): src/ as JavaScript in dist/, which every launcher runs, and the
 * check that refuses a dist/ older than its src/ (src/source-digest.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { build, toJavaScript } from '../../scripts/build.ts';
import { ExpectedFailure } from '../../src/expected-failure.ts';
import { API, BASE, CONSOLE, SERVICE_CONSOLE } from '../../src/http/base-path.ts';
import { consoleAssets } from '../../src/http/service-console/assets.ts';
import { BUILD_DIGEST_FILE, checkBuildIsCurrent } from '../../src/source-digest.ts';
import { SERVER_PROGRAM, serverProgram, startServer } from '../helpers/server-process.ts';

const root = resolve(import.meta.dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'vrp-build-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The offsets of the line ends of a text. */
const lineEnds = (text: string) => [...text.matchAll(/\n/g)].map((m) => m.index);

test('every module of src/ keeps its length and its lines when stripped: the source map names the same places', () => {
  const modules = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter(
    (f) => f.endsWith('.ts') && !f.endsWith('.d.ts'),
  );
  assert.ok(modules.length > 100, `only ${modules.length} modules found`);
  for (const file of modules) {
    const source = readFileSync(join(root, 'src', file), 'utf8');
    const js = toJavaScript(source, file);
    assert.equal(js.length, source.length, file);
    assert.deepEqual(lineEnds(js), lineEnds(source), file);
  }
});

test('types are blanked in place; imports, other specifiers and strings stay', () => {
  const source = [
    "import type { A } from './a.ts';",
    "import { b, type B } from '../b/b.ts';",
    "const d = await import('./d.ts');",
    "const note: string = 'main.ts';",
    'export function f(x: number): B { return x as unknown as B; }',
  ].join('\n');
  assert.equal(
    toJavaScript(source, 'x.ts'),
    [
      '                                ',
      "import { b,        } from '../b/b.ts';",
      "const d = await import('./d.ts');",
      "const note         = 'main.ts';",
      'export function f(x        )    { return x                ; }',
    ].join('\n'),
  );
});

test('an import() of a computed specifier is refused: the bundle could not hold what it names', () => {
  assert.throws(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source under test holds a template literal
    () => toJavaScript('const m = await import(`./${name}.ts`);', 'y.ts'),
    /y\.ts: import\(\) of a computed specifier/,
  );
  assert.throws(() => toJavaScript('const m = await import(name);', 'y.ts'), /computed specifier/);
});

/** What `node dist/main.js` (or another file of it) of a scratch tree prints. */
function runBuilt(out: string, file = 'main.js'): string {
  const r = spawnSync(process.execPath, [join(out, file)], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('a build bundles the modules, writes what changed, keeps the build before for a server still running it, removes older files, copies assets, and records its source', async () => {
  const src = join(scratch, 'tree', 'src');
  const out = join(scratch, 'tree', 'dist');
  mkdirSync(join(src, 'page', 'assets'), { recursive: true });
  writeFileSync(
    join(src, 'main.ts'),
    [
      "import { two } from './two.ts';",
      "import { readFileSync } from 'node:fs';",
      'const one: number = two - 1;',
      "const { three } = await import('./later.ts');",
      "console.log(one, three, readFileSync(new URL('./assets/style.css', import.meta.url), 'utf8').trim());",
      '',
    ].join('\n'),
  );
  writeFileSync(join(src, 'two.ts'), 'export const two = 2;\n');
  writeFileSync(join(src, 'later.ts'), 'export const three: number = 3;\n');
  writeFileSync(join(src, 'page', 'assets', 'style.css'), 'body { margin: 0 }\n');

  const first = await build(src, out);
  assert.equal(first.removed, 0);
  const files = () => readdirSync(out, { recursive: true, encoding: 'utf8' }).sort();
  const made = files();
  // main.js and the chunk of the dynamic import, each with its map; two.ts is inside main.js.
  assert.equal(made.filter((f) => f.endsWith('.js')).length, 2, made.join(' '));
  assert.ok(made.includes('main.js') && made.includes('main.js.map'), made.join(' '));
  assert.ok(!made.some((f) => f.startsWith('two')), made.join(' '));
  // All but the assets/ directory, .source and the records of the files made.
  assert.equal(first.written, made.length - 4, made.join(' '));
  const firstMain = readFileSync(join(out, 'main.js'));
  const chunk = made.filter((f) => f.endsWith('.js') && f !== 'main.js');
  assert.equal(readFileSync(join(out, 'assets', 'style.css'), 'utf8'), 'body { margin: 0 }\n');
  assert.equal(runBuilt(out), '1 3 body { margin: 0 }\n');
  const digest = readFileSync(join(out, BUILD_DIGEST_FILE), 'utf8');

  // Nothing changed: nothing written, not even touched.
  const before = statSync(join(out, 'main.js')).mtimeMs;
  assert.deepEqual(await build(src, out), { written: 0, removed: 0 });
  assert.equal(statSync(join(out, 'main.js')).mtimeMs, before);

  // The dynamic import gone, and a module, and the asset: the build before's files stay, so that a
  // server still running it (an upgrade built, not yet restarted) loads its chunk, whole.
  writeFileSync(join(src, 'main.ts'), 'const one = 1;\nconsole.log(one);\n');
  rmSync(join(src, 'two.ts'));
  rmSync(join(src, 'later.ts'));
  rmSync(join(src, 'page'), { recursive: true });
  assert.deepEqual(await build(src, out), { written: 2, removed: 0 });
  assert.equal(runBuilt(out), '1\n');
  assert.notEqual(readFileSync(join(out, BUILD_DIGEST_FILE), 'utf8'), digest);
  writeFileSync(join(out, 'running.js'), firstMain);
  assert.equal(runBuilt(out, 'running.js'), '1 3 body { margin: 0 }\n');
  rmSync(join(out, 'running.js'));
  // Built again with nothing changed: still kept.
  assert.deepEqual(await build(src, out), { written: 0, removed: 0 });
  assert.ok(existsSync(join(out, chunk[0] ?? 'none')), files().join(' '));

  // One more build that changes: the files of two builds ago are removed.
  writeFileSync(join(src, 'main.ts'), 'const one = 2;\nconsole.log(one);\n');
  // main.js written (its map maps the same places); the chunk, its map and the asset removed.
  assert.deepEqual(await build(src, out), { written: 1, removed: 3 });
  assert.deepEqual(files(), ['.files', '.files-before', BUILD_DIGEST_FILE, 'main.js', 'main.js.map']);
  assert.equal(runBuilt(out), '2\n');
});

test('a build refuses a file of src/ it could not place: neither a module nor an asset, or two assets of one name', async () => {
  const src = join(scratch, 'refused', 'src');
  const out = join(scratch, 'refused', 'dist');
  mkdirSync(join(src, 'a', 'assets'), { recursive: true });
  mkdirSync(join(src, 'b', 'assets'), { recursive: true });
  writeFileSync(join(src, 'main.ts'), 'console.log(1);\n');
  writeFileSync(join(src, 'a', 'assets', 'x.css'), 'a\n');
  writeFileSync(join(src, 'b', 'assets', 'x.css'), 'b\n');
  await assert.rejects(
    build(src, out),
    /src\/(a|b)\/assets\/x\.css and src\/(a|b)\/assets\/x\.css would both be dist\/assets\/x\.css/,
  );
  rmSync(join(src, 'b'), { recursive: true });
  writeFileSync(join(src, 'a', 'notes.txt'), 'n\n');
  await assert.rejects(
    build(src, out),
    /src\/a\/notes\.txt: not a module and not under an assets\/ directory/,
  );
  rmSync(join(src, 'a', 'notes.txt'));
  writeFileSync(join(src, 'main.ts'), "import { gone } from './gone.ts';\nconsole.log(gone);\n");
  await assert.rejects(build(src, out), /main\.ts:1:21: ERROR: Could not resolve "\.\/gone\.ts"/);
  writeFileSync(join(src, 'main.ts'), 'const o = { a: 1, a: 2 };\nconsole.log(o);\n');
  await assert.rejects(build(src, out), /main\.ts:1: WARNING: Duplicate key "a" in object literal/);
  assert.deepEqual(readdirSync(join(scratch, 'refused')), ['src'], 'a refused build wrote something');
});

test('a dist/ not built from the src/ beside it is refused; a current one, or one with no src/, is not', async () => {
  const src = join(scratch, 'checkout', 'src');
  const out = join(scratch, 'checkout', 'dist');
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'main.ts'), 'export const served = true;\n');
  await build(src, out);
  const main = pathToFileURL(join(out, 'main.js')).href;
  checkBuildIsCurrent(main);

  writeFileSync(join(src, 'main.ts'), 'export const served = false;\n');
  assert.throws(
    () => checkBuildIsCurrent(main),
    (err: unknown) =>
      err instanceof ExpectedFailure &&
      /was not built from the code in .*src \(changed since\): run `npm run build`/.test(err.message),
  );
  await build(src, out);
  checkBuildIsCurrent(main);

  // A file added to src/ counts too, and so does a dist/ whose record is gone.
  writeFileSync(join(src, 'more.ts'), 'export {};\n');
  assert.throws(() => checkBuildIsCurrent(main), ExpectedFailure);
  await build(src, out);
  rmSync(join(out, BUILD_DIGEST_FILE));
  assert.throws(() => checkBuildIsCurrent(main), ExpectedFailure);

  // No src/ beside it (an image that ships only the build), or not a dist/ at all: nothing to compare.
  rmSync(src, { recursive: true });
  checkBuildIsCurrent(main);
  checkBuildIsCurrent(pathToFileURL(join(root, 'src', 'main.ts')).href);
});

test('the server refuses to start from a dist/ older than its src/, with one line saying what to run', async () => {
  // A copy of the project's src/, built, then changed: what `git checkout` without a build leaves.
  const checkout = join(scratch, 'stale');
  mkdirSync(checkout);
  spawnSync('cp', ['-r', join(root, 'src'), join(checkout, 'src')]);
  spawnSync('ln', ['-s', join(root, 'node_modules'), join(checkout, 'node_modules')]);
  spawnSync('cp', [join(root, 'package.json'), checkout]);
  await build(join(checkout, 'src'), join(checkout, 'dist'));
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

test('the built server serves as the source does: the API, the console, the service console and the API reference with their files', async () => {
  const data = join(scratch, 'served');
  const server = await startServer({ VRP_DATA_DIR: data }, undefined, undefined, serverProgram());
  try {
    assert.deepEqual(server.child.spawnargs.slice(-1), [SERVER_PROGRAM]);
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
    const version = await fetch(`${server.url}${API}/version`);
    assert.equal(version.status, 401);
    assert.equal(((await version.json()) as { error_code?: string }).error_code, 'invalid_token');
    const same = async (path: string, file: string) => {
      const r = await fetch(`${server.url}${path}`);
      assert.equal(r.status, 200, path);
      assert.deepEqual(Buffer.from(await r.arrayBuffer()), readFileSync(file), path);
    };
    // Our own assets, from dist/assets/ wherever the bundle put the module that reads them.
    await same(
      `${CONSOLE}/assets/console.css`,
      join(root, 'src', 'http', 'console', 'assets', 'console.css'),
    );
    const { version: assets } = await consoleAssets();
    const serviceConsole = join(root, 'src', 'http', 'service-console', 'assets');
    await same(
      `${SERVICE_CONSOLE}/assets/${assets}/service-console.js`,
      join(serviceConsole, 'service-console.js'),
    );
    // Packages' files, found where the packages are.
    await same(
      `${SERVICE_CONSOLE}/assets/${assets}/xterm.mjs`,
      join(root, 'node_modules', '@xterm', 'xterm', 'lib', 'xterm.mjs'),
    );
    await same(
      `${SERVICE_CONSOLE}/assets/${assets}/novnc/core/rfb.js`,
      join(root, 'node_modules', '@novnc', 'novnc', 'core', 'rfb.js'),
    );
    await same(
      `${BASE}/docs/swagger-ui.css`,
      join(root, 'node_modules', 'swagger-ui-dist', 'swagger-ui.css'),
    );
  } finally {
    assert.equal(await server.stop(), 0, server.output());
  }
});

test("the bundle's source maps name the source's lines and columns", () => {
  serverProgram();
  const main = readFileSync(join(root, 'dist', 'main.js'), 'utf8');
  const map = new SourceMap(JSON.parse(readFileSync(join(root, 'dist', 'main.js.map'), 'utf8')));
  const source = readFileSync(join(root, 'src', 'main.ts'), 'utf8').split('\n');
  const call = 'checkBuildIsCurrent(import.meta.url)';
  const builtLines = main.split('\n');
  const line = builtLines.findIndex((l) => l.includes(call));
  assert.ok(line >= 0, 'the call is not in dist/main.js');
  const entry = map.findEntry(line, builtLines[line]?.indexOf(call) ?? -1);
  assert.ok('originalSource' in entry, 'no mapping');
  assert.match(entry.originalSource, /src\/main\.ts$/);
  assert.equal(source[entry.originalLine]?.indexOf(call), entry.originalColumn);
});

test("the project's classes keep their names in the bundle: a logged error's type is the source's", () => {
  serverProgram();
  const classes = new Set<string>();
  for (const file of readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }))
    if (file.endsWith('.ts'))
      for (const m of readFileSync(join(root, 'src', file), 'utf8').matchAll(/^(?:export )?class (\w+)/gm))
        if (m[1]) classes.add(m[1]);
  assert.ok(classes.has('ApiError') && classes.has('ExpectedFailure'), [...classes].join(' '));
  const bundle = readdirSync(join(root, 'dist'))
    .filter((f) => f.endsWith('.js'))
    .map((f) => readFileSync(join(root, 'dist', f), 'utf8'))
    .join('\n');
  // A module of the project is at the top of the bundle (a CommonJS package's code is indented
  // inside its wrapper), a class declared `class C` or `var C = class`; one esbuild renamed has
  // a digit added.
  const declared = (name: string) =>
    new RegExp(`^(class ${name}\\b|(var|let|const) ${name} = class\\b)`, 'm');
  assert.match(bundle, declared('ApiError'));
  assert.match(bundle, declared('LruMap'));
  const renamed = [...classes].filter((c) => declared(`${c}\\d+`).test(bundle));
  assert.deepEqual(renamed, []);
});
