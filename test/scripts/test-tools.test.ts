import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { findPostgresBin, onPath, prepareTools, type Tool } from '../../scripts/test-tools.ts';

describe("the suite's tools from outside npm (scripts/test-tools.ts)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-test-tools-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  function binDir(path: string, names = ['initdb', 'pg_ctl', 'postgres']): string {
    mkdirSync(path, { recursive: true });
    for (const name of names) {
      writeFileSync(join(path, name), '#!/bin/sh\n');
      chmodSync(join(path, name), 0o755);
    }
    return path;
  }

  test("PostgreSQL's binaries: any version Debian put there, the highest first; $PATH before that", () => {
    const debian = join(dir, 'usr-lib-postgresql');
    binDir(join(debian, '9.6', 'bin'));
    binDir(join(debian, '13', 'bin'));
    const v17 = binDir(join(debian, '17', 'bin'));
    binDir(join(debian, '18', 'bin'), ['initdb']); // incomplete: no pg_ctl, no postgres
    mkdirSync(join(debian, 'not-a-version'));
    assert.equal(findPostgresBin({ PATH: '/nowhere' }, debian), v17);
    const onThePath = binDir(join(dir, 'local-bin'));
    assert.equal(findPostgresBin({ PATH: `/nowhere:${onThePath}` }, debian), onThePath);
    assert.equal(findPostgresBin({ PATH: '/nowhere', VRP_TEST_PG_BIN: onThePath }, debian), onThePath);
    assert.equal(
      findPostgresBin({ PATH: '/nowhere', VRP_TEST_PG_BIN: join(dir, 'none') }, debian),
      undefined,
    );
    assert.equal(findPostgresBin({ PATH: '/nowhere' }, join(dir, 'no-debian')), undefined);
  });

  test('onPath looks in each directory of $PATH in order', () => {
    const a = binDir(join(dir, 'a'), ['tool']);
    const b = binDir(join(dir, 'b'), ['tool', 'other']);
    assert.equal(onPath('tool', `${a}:${b}`), join(a, 'tool'));
    assert.equal(onPath('other', `${a}:${b}`), join(b, 'other'));
    assert.equal(onPath('missing', `${a}:${b}`), undefined);
  });

  test('a missing tool is one line naming it, the tests it costs and how to install it; found ones go to the env', () => {
    const found = join(binDir(join(dir, 'found'), ['thing']), 'thing');
    const tools: Tool[] = [
      {
        name: 'promtool',
        label: 'promtool',
        purpose: 'the promtool tests',
        packages: ['prometheus'],
        neededBy: /./,
        envVar: 'VRP_X_PROMTOOL',
        find: () => undefined,
      },
      {
        name: 'chromium',
        label: 'chromium',
        purpose: 'the browser tests',
        packages: ['chromium-headless-shell'],
        neededBy: /./,
        envVar: 'VRP_X_CHROMIUM',
        find: () => found,
      },
    ];
    const said: string[] = [];
    const prepared = prepareTools({ installWanted: false, say: (l) => said.push(l) }, tools);
    assert.deepEqual(prepared.env, { VRP_X_CHROMIUM: found });
    assert.deepEqual(
      prepared.missing.map((t) => t.name),
      ['promtool'],
    );
    assert.deepEqual(said, [
      `promtool is missing, so the promtool tests are skipped; install: ${process.getuid?.() === 0 ? '' : 'sudo '}apt-get install prometheus`,
    ]);
  });
});
