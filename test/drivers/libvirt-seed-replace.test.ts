/**
 * A VM's seed replaced (a password reset, a new address) while the host drops the upload: the
 * old seed is deleted only once its replacement is on the host, so the attempt that failed
 * loses nothing, and the job's next attempt keeps the login and SSH keys the seed carried. A
 * wrapper ahead of `virsh` on PATH fails the chosen upload once, as a connection reset does; every
 * other command is the real virsh's. Runs where VRP_TEST_LIBVIRT_TEMPLATE names the test template
 * and libvirtd runs.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { createCommands } from '../../src/drivers/libvirt/commands.ts';
import { readSeedUserData, userDataSshKeys } from '../../src/drivers/libvirt/seed.ts';
import type { Store } from '../../src/store/database.ts';
import { closeLibvirtDriverOnStore, libvirtDriverOnStore, poolVolumes } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const vmId = randomUUID();
const seedVolume = `${vmId}.seed.iso`;
const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOr1fVAr8o0y2N1ZbK5v6zGkq5Nh0yY2mJ2fZ1X0aYbc seed@test';

/** The VM's seed's user-data, downloaded from the pool. */
async function userDataOfSeed(dir: string): Promise<string> {
  const iso = join(dir, 'seed-copy.iso');
  execFileSync('virsh', ['-c', 'qemu:///system', 'vol-download', '--pool', 'vrp', seedVolume, iso]);
  try {
    return await readSeedUserData(createCommands(), iso);
  } finally {
    rmSync(iso, { force: true });
  }
}

describe('a seed whose replacement upload fails (libvirt)', { skip: noLibvirtTemplate }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-seed-replace-'));
  const wrapperDir = mkdtempSync(join(tmpdir(), 'vrp-virsh-wrapper-'));
  const flag = join(wrapperDir, 'fail-next-upload');
  const savedPath = process.env.PATH;
  let store: Store;
  let driver: HypervisorDriver;

  before(async () => {
    const realVirsh = execFileSync('sh', ['-c', 'command -v virsh'], { encoding: 'utf8' }).trim();
    // Fails the next `vol-upload` of the VM's seed once (while the flag file exists).
    writeFileSync(
      join(wrapperDir, 'virsh'),
      `#!/bin/sh
up=; hit=
for a in "$@"; do
  [ "$a" = vol-upload ] && up=1
  [ "$a" = ${JSON.stringify(seedVolume)} ] && hit=1
done
if [ -n "$up" ] && [ -n "$hit" ] && [ -e ${JSON.stringify(flag)} ]; then
  rm -f ${JSON.stringify(flag)}
  echo "error: Cannot recv data: Connection reset by peer" >&2
  exit 1
fi
exec ${JSON.stringify(realVirsh)} "$@"
`,
    );
    chmodSync(join(wrapperDir, 'virsh'), 0o755);
    process.env.PATH = `${wrapperDir}:${savedPath}`;
    ({ store, driver } = await libvirtDriverOnStore(dataDir));
    await driver.create({
      vmId,
      hostname: 'seed.example.com',
      username: 'admin',
      password: 'First-pass-1',
      templateId: 'tiny',
      cpu: 1,
      ramGb: 1,
      diskGb: 1,
      ipCount: 1,
      sshKeys: [key],
    });
    // Off: nothing here needs the guest, and the machine's cores are better spent elsewhere.
    await driver.powerOff(vmId);
  });

  after(async () => {
    process.env.PATH = savedPath;
    await closeLibvirtDriverOnStore({ store, driver }, dataDir, [vmId]);
    rmSync(wrapperDir, { recursive: true, force: true });
  });

  test('a password reset whose seed upload is dropped keeps the SSH keys on its next attempt', async () => {
    writeFileSync(flag, '');
    await assert.rejects(
      driver.setPassword(vmId, 'admin', 'Second-pass-2'),
      (err: unknown) => err instanceof DriverError && err.transient,
    );
    assert.ok(!existsSync(flag), 'the upload was the one that failed');
    // The job's next attempt.
    assert.equal(await driver.setPassword(vmId, 'admin', 'Second-pass-2'), 'next_boot');
    const userData = await userDataOfSeed(dataDir);
    assert.deepEqual(userDataSshKeys(userData), [key], 'the keys the seed carried are kept');
    assert.match(userData, /Second-pass-2/);
    assert.ok(!poolVolumes().includes(`${vmId}.seed.next.iso`), 'no replacement left staged');
    // A new address's seed (no password given) keeps the login the seed carries.
    await driver.resize(vmId, { cpu: 1, ramGb: 1, diskGb: 1, ipCount: 2 });
    const after = await userDataOfSeed(dataDir);
    assert.deepEqual(userDataSshKeys(after), [key]);
    assert.match(after, /Second-pass-2/);
  });
});
