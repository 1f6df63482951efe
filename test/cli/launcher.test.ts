/**
 * The README's `bin/vrp.js ...` on a machine whose own Node is older than 24 (Debian's, say):
 * it prints only its answer. Runs where such a Node is on PATH; elsewhere there is nothing to test.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, describe, test } from 'node:test';

/** The first directory on PATH with a `node` other than Node 24, and its version. */
function olderNode(): { dir: string; version: string } | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    const bin = join(dir, 'node');
    if (!dir || !existsSync(bin)) continue;
    const version = execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim();
    if (!version.startsWith('v24.')) return { dir, version };
  }
  return undefined;
}

const older = olderNode();
const dataDir = mkdtempSync(join(tmpdir(), 'vrp-launcher-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

describe('bin/vrp.js started by an older Node', {
  skip: !older && 'no Node other than 24 on PATH',
}, () => {
  // Only the older Node's directory and the system's: nothing of the project's on PATH, as in a
  // newcomer's shell. The file is run as a program (its `#!/usr/bin/env node` line).
  const run = (args: string[]) =>
    spawnSync('bin/vrp.js', args, {
      env: { ...process.env, PATH: [older!.dir, '/usr/bin', '/bin'].join(delimiter), VRP_DATA_DIR: dataDir },
      encoding: 'utf8',
    });

  test(`help and a command answer, and stderr is empty (${older?.version})`, () => {
    const help = run(['--help']);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^usage: vrp/);
    assert.equal(help.stderr, '');

    const migrate = run(['migrate', '--json']);
    assert.equal(migrate.status, 0, migrate.stderr);
    assert.ok(Array.isArray(JSON.parse(migrate.stdout).applied));
    assert.equal(migrate.stderr, '');

    const failed = run(['reseller', 'disable', 'nobody']);
    assert.equal(failed.status, 1, 'the exit code comes through');
    assert.equal(failed.stderr, 'vrp: no reseller named "nobody"\n');
  });
});
