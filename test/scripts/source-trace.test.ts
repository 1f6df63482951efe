/**
 * Reading a trace of the built server (scripts/source-trace.ts): each place in the bundle given as
 * the place in the source, by the source maps the build writes beside it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sourcePlace, sourceTrace } from '../../scripts/source-trace.ts';
import { serverProgram } from '../helpers/server-process.ts';

const root = resolve(import.meta.dirname, '..', '..');

/** The place (from 1) of the first occurrence of `text` in a file's lines. */
function placeOf(file: string, text: string): { line: number; column: number } {
  const lines = readFileSync(file, 'utf8').split('\n');
  const line = lines.findIndex((l) => l.includes(text));
  assert.ok(line >= 0, `${text} is not in ${file}`);
  return { line: line + 1, column: (lines[line]?.indexOf(text) ?? 0) + 1 };
}

/** The file of dist/ that holds `text`, and its place there. */
function builtPlaceOf(text: string): { file: string; line: number; column: number } {
  serverProgram();
  const dist = join(root, 'dist');
  const file = readdirSync(dist)
    .filter((f) => f.endsWith('.js'))
    .map((f) => join(dist, f))
    .find((f) => readFileSync(f, 'utf8').includes(text));
  assert.ok(file, `${text} is in no file of dist/`);
  return { file, ...placeOf(file, text) };
}

test("a place in the bundle is the source's place, in the project's modules and in a package's", () => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the source's text, which holds a template literal
  const call = 'readFileSync(new URL(`./assets/${name}`, import.meta.url))';
  const built = builtPlaceOf(call);
  assert.deepEqual(sourcePlace(built.file, built.line, built.column, root), {
    file: 'src/http/console/assets.ts',
    ...placeOf(join(root, 'src', 'http', 'console', 'assets.ts'), call),
  });

  const packaged = builtPlaceOf('function fastify(serverOptions)');
  const place = sourcePlace(pathToFileURL(packaged.file).href, packaged.line, packaged.column, root);
  assert.equal(place?.file, 'node_modules/fastify/fastify.js');
  assert.equal(
    place?.line,
    placeOf(join(root, 'node_modules', 'fastify', 'fastify.js'), 'function fastify (').line,
  );
});

test('a trace: the places in dist/ rewritten, every other place and line left as it is', () => {
  const call = 'checkBuildIsCurrent(import.meta.url)';
  const built = builtPlaceOf(call);
  const source = placeOf(join(root, 'src', 'main.ts'), call);
  const trace = [
    'Error: dist was not built from the code',
    `    at file://${built.file}:${built.line}:${built.column}`,
    `    at ${built.file}:${built.line}:${built.column}`,
    '    at ModuleJob.run (node:internal/modules/esm/module_job:343:25)',
    `    at somewhere (${join(root, 'bin', 'vrp.js')}:3:4)`,
    `    at nowhere (${join(root, 'dist', 'gone.js')}:3:4)`,
    '',
  ];
  assert.equal(
    sourceTrace(trace.join('\n'), root),
    [
      trace[0],
      `    at src/main.ts:${source.line}:${source.column}`,
      `    at src/main.ts:${source.line}:${source.column}`,
      ...trace.slice(3),
    ].join('\n'),
  );
  // The command: from its standard input.
  const r = spawnSync(process.execPath, ['scripts/source-trace.ts'], {
    cwd: root,
    input: trace[2],
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `    at src/main.ts:${source.line}:${source.column}`);
});

test('the command: a file it cannot read, or too many arguments, is one line and exit 2', () => {
  const missing = spawnSync(process.execPath, ['scripts/source-trace.ts', join(root, 'no-such-trace.txt')], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /^source-trace: cannot read .*no-such-trace\.txt: ENOENT[^\n]*\n$/);
  const many = spawnSync(process.execPath, ['scripts/source-trace.ts', 'a', 'b'], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(many.status, 2);
  assert.match(many.stderr, /^usage: node scripts\/source-trace\.ts \[FILE\]/);
});
