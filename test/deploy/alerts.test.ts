/**
 * The example alert rules (deploy/alerts.yml): promtool accepts them, and every metric of ours
 * they name is one a process serves on GET /metrics, so an alert cannot stay silent because its
 * metric was renamed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { createTestApp } from '../helpers/app.ts';
import { missingTool, toolPath } from '../helpers/tools.ts';

const rules = join(resolve(import.meta.dirname, '..', '..'), 'deploy', 'alerts.yml');

test('promtool check rules accepts deploy/alerts.yml', { skip: missingTool('promtool') }, () => {
  const r = spawnSync(toolPath('promtool'), ['check', 'rules', rules], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /SUCCESS: \d+ rules found/);
});

test('every vrp_ metric the alert rules name is served on GET /metrics', async () => {
  const named = new Set(readFileSync(rules, 'utf8').match(/\bvrp_[a-z_]+/g) ?? []);
  assert.ok(named.size >= 5, [...named].join(' '));
  const t = await createTestApp();
  try {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    const served = new Set([...res.body.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    for (const name of named)
      assert.ok(served.has(name), `${name} is not served (served: ${[...served].join(' ')})`);
  } finally {
    await t.close();
  }
});
