/**
 * This machine's private directories of copies (src/drivers/libvirt/storage.ts): named after the
 * machine and the process; a process started later removes those of this machine's processes
 * that ended and those named without their process a day after their last change, and leaves a
 * live process's, another machine's and anything else.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { makePrivateDir, sweepPrivateDirs, withPrivateDir } from '../../src/drivers/libvirt/storage.ts';

/** A process of this machine that has ended: its pid. */
async function endedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid ?? assert.fail('no pid');
}

test('a process removes the private directories of ended processes of its machine, and only those', async () => {
  const usual = process.env['TMPDIR'];
  const dir = mkdtempSync(join(tmpdir(), 'vrp-private-dirs-'));
  process.env['TMPDIR'] = dir;
  const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
  try {
    const machine = hostname().replace(/[^A-Za-z0-9.]/g, '_');
    const mine = await makePrivateDir();
    assert.match(mine, new RegExp(`/vrp-lv-${machine.replace(/\./g, '\\.')}-${process.pid}-[A-Za-z0-9]{6}$`));
    await withPrivateDir(async (used) => {
      assert.ok(used.startsWith(join(dir, `vrp-lv-${machine}-${process.pid}-`)));
    });
    const dead = await endedPid();
    const make = (name: string, ageMs = 0) => {
      const path = join(dir, name);
      mkdirSync(path);
      // A copy's file in it (a 1 MiB part of a disk).
      writeFileSync(join(path, 'export.qcow2'), Buffer.alloc(2 ** 20, 1));
      const at = (Date.now() - ageMs) / 1000;
      utimesSync(path, at, at);
      return name;
    };
    const day = 24 * 60 * 60_000;
    const gone = [
      make(`vrp-lv-${machine}-${dead}-aB3dE9`),
      make('vrp-lv-export-Qx7Lm2', day + 60_000),
      make('vrp-lv-Zz9Yy8', day + 60_000),
    ];
    const kept = [
      mine.slice(dir.length + 1),
      make(`vrp-lv-${machine}-${live.pid}-Kp4Rt6`),
      make(`vrp-lv-other-machine-${dead}-Mn5Op7`),
      make('vrp-lv-export-Fr3sh1', day - 60_000),
      make('vrp-lv-notes'),
      make('something-else'),
    ];
    assert.equal(await sweepPrivateDirs(), gone.length);
    assert.deepEqual(readdirSync(dir).sort(), [...kept].sort());
    for (const name of gone) assert.ok(!existsSync(join(dir, name)));
    // Nothing more to remove.
    assert.equal(await sweepPrivateDirs(), 0);
  } finally {
    live.kill();
    if (usual === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = usual;
    rmSync(dir, { recursive: true, force: true });
  }
});
