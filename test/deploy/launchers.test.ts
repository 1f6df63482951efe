/**
 * Every launcher of the server gives node the same flags (test/helpers/server-process.ts's
 * SERVER_NODE_FLAGS, which the tests and the bench start it with): `npm start`, the systemd
 * units of deploy/, the container image's command and the command scripts/image.sh checks it
 * has. A flag of V8's heap works only on node's command line, so a launcher without it would
 * run the server with another peak memory than the one measured (docs/deploy.md, "Memory").
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { SERVER_NODE_FLAGS } from '../helpers/server-process.ts';

const root = resolve(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** The words of a command line, between node and the program. */
function flagsOf(words: readonly string[], where: string): string[] {
  const program = words.findIndex((w) => w.endsWith('src/main.ts'));
  assert.ok(program > 0, `${where}: no src/main.ts in ${JSON.stringify(words)}`);
  assert.match(words[0]!, /(^|\/)node$/, `${where}: not run by node`);
  return words.slice(1, program);
}

test('every launcher starts the server with the same node flags as the tests and the bench', () => {
  assert.ok(SERVER_NODE_FLAGS.length > 0);
  const launchers: [string, string[]][] = [];
  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
  launchers.push(['package.json start', pkg.scripts['start']!.split(/\s+/)]);
  for (const unit of ['deploy/vrp.service', 'deploy/vrp-worker@.service']) {
    const line = read(unit)
      .split('\n')
      .find((l) => l.startsWith('ExecStart='));
    assert.ok(line, `${unit}: no ExecStart`);
    launchers.push([unit, line.slice('ExecStart='.length).split(/\s+/)]);
  }
  const cmd = read('Containerfile')
    .split('\n')
    .find((l) => l.startsWith('CMD '));
  assert.ok(cmd, 'Containerfile: no CMD');
  launchers.push(['Containerfile CMD', JSON.parse(cmd.slice(4)) as string[]]);
  const checked = /\[\[ \$cmd == '(\[[^']*\])' \]\]/.exec(read('scripts/image.sh'));
  assert.ok(checked, 'scripts/image.sh: no check of the image command');
  launchers.push(['scripts/image.sh check_config', JSON.parse(checked[1]!) as string[]]);
  for (const [where, words] of launchers) assert.deepEqual(flagsOf(words, where), SERVER_NODE_FLAGS, where);
});
