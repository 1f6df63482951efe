/**
 * Every launcher of the server gives node the same flags and environment (test/helpers/
 * server-process.ts's SERVER_NODE_FLAGS and SERVER_ENV, which the tests and the bench start it
 * with): `npm start`, the systemd units of deploy/, the container image's command and
 * environment, and what scripts/image.sh checks the image has. A flag of V8's heap works only on
 * node's command line, and the C library reads MALLOC_ARENA_MAX as the process starts, so a
 * launcher without them would run the server with another peak memory than the one measured
 * (docs/deploy.md, "Memory").
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { SERVER_ENV, SERVER_NODE_FLAGS, SERVER_PROGRAM } from '../helpers/server-process.ts';

const root = resolve(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** The words of a command line, between node and the program (`NAME=value` words before node are its environment). */
function flagsOf(words: readonly string[], where: string): string[] {
  const program = words.findIndex((w) => w.endsWith(SERVER_PROGRAM));
  const node = words.findIndex((w) => !/^[A-Z_]+=/.test(w));
  assert.ok(program > node, `${where}: no ${SERVER_PROGRAM} in ${JSON.stringify(words)}`);
  assert.match(words[node]!, /(^|\/)node$/, `${where}: not run by node`);
  return words.slice(node + 1, program);
}

/** NAME=value pairs as an object. */
function envOf(pairs: readonly string[]): Record<string, string> {
  return Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
}

/** The launcher's environment, restricted to the names SERVER_ENV sets. */
function serverEnvOf(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(SERVER_ENV).map((k) => [k, env[k] ?? '(unset)']));
}

test('every launcher starts the server with the same node flags and environment as the tests and the bench', () => {
  assert.ok(SERVER_NODE_FLAGS.length > 0);
  assert.ok(Object.keys(SERVER_ENV).length > 0);
  const launchers: [string, string[], Record<string, string>][] = [];

  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
  // The build first (scripts/build.ts), then the server.
  const [serve, ...before] = pkg.scripts['start']!.split(/\s*&&\s*/).reverse();
  assert.deepEqual(before, ['node scripts/build.ts'], 'package.json start: not built first');
  const start = serve!.split(/\s+/);
  launchers.push(['package.json start', start, envOf(start.slice(0, start.indexOf('node')))]);

  for (const unit of ['deploy/vrp.service', 'deploy/vrp-worker@.service']) {
    const lines = read(unit).split('\n');
    const line = lines.find((l) => l.startsWith('ExecStart='));
    assert.ok(line, `${unit}: no ExecStart`);
    const env = envOf(
      lines.filter((l) => l.startsWith('Environment=')).map((l) => l.slice('Environment='.length)),
    );
    launchers.push([unit, line.slice('ExecStart='.length).split(/\s+/), env]);
  }

  const containerfile = read('Containerfile');
  const cmd = containerfile.split('\n').find((l) => l.startsWith('CMD '));
  assert.ok(cmd, 'Containerfile: no CMD');
  // ENV NAME=value \ NAME=value ...: the instruction's lines joined.
  const envInstruction = /^ENV ((?:.*\\\n)*.*)$/m.exec(containerfile);
  assert.ok(envInstruction, 'Containerfile: no ENV');
  const imageEnv = envOf(envInstruction[1]!.split(/[\s\\]+/).filter((w) => w.includes('=')));
  launchers.push(['Containerfile CMD and ENV', JSON.parse(cmd.slice(4)) as string[], imageEnv]);

  const image = read('scripts/image.sh');
  const checked = /\[\[ \$cmd == '(\[[^']*\])' \]\]/.exec(image);
  assert.ok(checked, 'scripts/image.sh: no check of the image command');
  const checkedEnv = [...image.matchAll(/\[\[ \$env == \*'"([A-Z_]+=[^"]*)"'\* \]\]/g)].map((m) => m[1]!);
  launchers.push(['scripts/image.sh check_config', JSON.parse(checked[1]!) as string[], envOf(checkedEnv)]);

  for (const [where, words, env] of launchers) {
    assert.deepEqual(flagsOf(words, where), SERVER_NODE_FLAGS, where);
    assert.deepEqual(serverEnvOf(env), SERVER_ENV, where);
  }
});
