/**
 * The systemd units the project ships (deploy/vrp.service, deploy/vrp-worker@.service), checked by
 * systemd's own tools: `systemd-analyze verify` finds no problem in them, and `systemd-analyze
 * security` rates their exposure 2.0 or better ("OK" or "SAFE"). The units run the process from
 * /opt/vrp; the check runs a copy that names this checkout instead, since verify wants the
 * program to exist. This machine's PID 1 need not be systemd: both commands read unit files.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { missingTool, toolPath } from '../helpers/tools.ts';

const root = resolve(import.meta.dirname, '..', '..');
const UNITS = ['vrp.service', 'vrp-worker@.service'] as const;
const skip = missingTool('systemd-analyze');

describe('the shipped systemd units', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-units-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const unit = (name: string) => readFileSync(join(root, 'deploy', name), 'utf8');
  const here = (name: string) => {
    const path = join(dir, name);
    writeFileSync(path, unit(name).replaceAll('/opt/vrp', root));
    return path;
  };
  const analyze = (...args: string[]) =>
    spawnSync(toolPath('systemd-analyze'), args, {
      encoding: 'utf8',
      env: { ...process.env, SYSTEMD_COLORS: '0' },
    });

  for (const name of UNITS) {
    test(`${name}: systemd-analyze verify finds nothing`, () => {
      const r = analyze('verify', here(name));
      assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
      assert.equal(`${r.stdout}${r.stderr}`.trim(), '', 'no warning either');
    });

    test(`${name}: systemd-analyze security rates it 2.0 or better`, () => {
      const r = analyze('security', '--offline=yes', here(name));
      const m = /Overall exposure level for \S+: (\d+\.\d) (\w+)/.exec(r.stdout);
      assert.ok(m, r.stdout + r.stderr);
      assert.ok(Number(m[1]) <= 2.0, `exposure ${m[1]} ${m[2]}`);
      assert.ok(['OK', 'SAFE'].includes(m[2] ?? ''), m[0]);
    });

    test(`${name}: stops within its TimeoutStopSec, writes only its state directory, runs as its user`, () => {
      const text = unit(name);
      const setting = (key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(text)?.[1];
      // The process ends its own shutdown after 30 s at the latest (src/shutdown.ts): systemd
      // must not kill it sooner.
      assert.ok(Number(setting('TimeoutStopSec')?.replace(/s$/, '')) > 30, 'TimeoutStopSec over 30 s');
      assert.equal(setting('ProtectSystem'), 'strict');
      assert.equal(setting('NoNewPrivileges'), 'yes');
      assert.equal(setting('PrivateTmp'), 'yes');
      assert.equal(setting('CapabilityBoundingSet'), '');
      assert.equal(setting('User'), 'vrp');
      assert.match(setting('Environment') ?? '', /VRP_DATA_DIR=\/var\/lib\/vrp-provider/);
      assert.equal(setting('StateDirectory'), 'vrp-provider');
    });
  }

  test('the worker runs only jobs (VRP_ROLE=worker); the main unit both', () => {
    assert.match(unit('vrp-worker@.service'), /^Environment=.*VRP_ROLE=worker/m);
    assert.doesNotMatch(unit('vrp.service'), /^Environment=.*VRP_ROLE=/m);
  });
});
