/**
 * A host's template copies that no VM uses go, on a libvirt test host of its own
 * (scripts/libvirt/test-host.sh) with real VMs: the catalogue's image changes (another
 * checksum), so the next VM brings a second upload and the host's record names it; the first
 * upload stays while a VM boots its kernel and has its disk over it, running or off, and goes
 * once that VM is gone; an upload no record names and nothing uses (a worker died mid-upload)
 * goes at once after the grace period; the VM on the new upload runs on untouched.
 * Runs where VRP_TEST_LIBVIRT_TEMPLATE names the test template.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createCommands } from '../../src/drivers/libvirt/commands.ts';
import { uploadsNamedOnHost } from '../../src/drivers/libvirt/template-sweep.ts';
import { slowWaitMs } from '../helpers/budget.ts';
import { libvirtDriverOnStore, poolVolumes, startTestHost, testHostScript } from '../helpers/libvirt.ts';
import { libvirtTemplate, noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const skip = noLibvirtTemplate || (!existsSync(testHostScript) && 'needs scripts/libvirt/test-host.sh');

test('template copies no VM uses are removed from the host; those in use and the recorded one stay', {
  skip,
  timeout: slowWaitMs(900_000),
}, async () => {
  const host = await startTestHost(`vrpts${process.pid}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-template-sweep-'));
  after(async () => {
    await host.stop().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { store, driver } = await libvirtDriverOnStore(dataDir, {
    VRP_LIBVIRT_HOSTS: `a,${host.uri},4,8,100`,
    // Removed at the pass after the one that first saw it unused: the grace is the test's to skip.
    VRP_TEMPLATE_SWEEP_GRACE: '0',
  });
  const sweep = () => {
    assert.ok(driver.clearUnusedTemplates);
    return driver.clearUnusedTemplates('a');
  };
  /** A pass that sees, then the pass that removes (the grace is 0). */
  const sweepTwice = async () => {
    const first = await sweep();
    const second = await sweep();
    return { removed: [...first.removed, ...second.removed], failed: [...first.failed, ...second.failed] };
  };
  const templates = () => poolVolumes(host.uri).filter((v) => v.startsWith('template-'));
  const recorded = async () =>
    (
      await store.db
        .selectFrom('host_images')
        .select('volume')
        .where('host_id', '=', 'a')
        .executeTakeFirstOrThrow()
    ).volume;
  const uploadOf = (volume: string) => volume.replace(/\.qcow2$/, '');
  const order = (hostname: string) => ({
    vmId: randomUUID(),
    hostname,
    username: 'root',
    password: 'Sweep-pass-1',
    templateId: 'tiny',
    cpu: 1,
    ramGb: 1,
    diskGb: 1,
    ipCount: 1,
  });
  const vms: string[] = [];
  try {
    // A worker that died mid-upload: a volume of an upload no record names, nothing uses.
    const stray = 'template-tiny-000000000000-deadbeef.qcow2';
    execFileSync('virsh', ['-c', host.uri, 'vol-create-as', 'vrp', stray, '1M', '--format', 'qcow2'], {
      stdio: 'ignore',
    });

    const first = order('first.example.com');
    vms.push(first.vmId);
    await driver.create(first);
    const old = uploadOf(await recorded());

    // The catalogue's image changes: the same files, the disk one MiB larger (another checksum).
    const changed = join(dataDir, 'template');
    cpSync(libvirtTemplate ?? '', changed, { recursive: true });
    execFileSync('qemu-img', ['resize', '-f', 'qcow2', join(changed, 'disk.qcow2'), '+1M'], {
      stdio: 'ignore',
    });
    await store.db.updateTable('os_templates').set({ image: changed }).where('id', '=', 'tiny').execute();
    const second = order('second.example.com');
    vms.push(second.vmId);
    await driver.create(second);
    const current = uploadOf(await recorded());
    assert.notEqual(current, old, 'the changed image is a second upload, and the record names it');
    const parts = (u: string) => [`${u}.initrd`, `${u}.qcow2`, `${u}.vmlinuz`];
    assert.deepEqual(templates().sort(), [...parts(current), ...parts(old), stray].sort());

    // What the host names, read by the sweep: the first VM's kernel (its domain's definitions)
    // names the old upload even without its disk's backing file being read, running or off.
    const commands = createCommands();
    try {
      assert.ok(
        (await uploadsNamedOnHost(commands, host.uri, new Set())).has(old),
        'named by the running domain',
      );
      await driver.powerOff(first.vmId);
      assert.ok(
        (await uploadsNamedOnHost(commands, host.uri, new Set())).has(old),
        'named by the defined domain',
      );
      // The disk's backing file alone names it too (the volumes read, the domain not there).
      execFileSync('virsh', ['-c', host.uri, 'undefine', `vrp-${first.vmId}`], { stdio: 'ignore' });
      const withDisk = await uploadsNamedOnHost(commands, host.uri, new Set([`${first.vmId}.qcow2`]));
      assert.ok(withDisk.has(old), 'named by the disk over it');
      assert.ok(!(await uploadsNamedOnHost(commands, host.uri, new Set())).has(old), 'nothing else names it');
    } finally {
      await commands.close();
    }

    // The stray upload goes; the old one stays (a disk is over it), the recorded one stays.
    assert.deepEqual(await sweepTwice(), { removed: [stray], failed: [] });
    assert.deepEqual(templates().sort(), [...parts(current), ...parts(old)].sort());

    // The first VM's disk goes (its domain already did): the old upload goes at the next passes, the disk last.
    execFileSync('virsh', ['-c', host.uri, 'vol-delete', '--pool', 'vrp', `${first.vmId}.qcow2`], {
      stdio: 'ignore',
    });
    assert.deepEqual(await sweepTwice(), {
      removed: [`${old}.initrd`, `${old}.vmlinuz`, `${old}.qcow2`],
      failed: [],
    });
    assert.deepEqual(templates().sort(), parts(current).sort());

    // The VM on the new upload runs on; later passes remove nothing more.
    assert.equal((await driver.inspect(second.vmId))?.power, 'running');
    assert.deepEqual(await sweepTwice(), { removed: [], failed: [] });
    assert.deepEqual(templates().sort(), parts(current).sort());
  } finally {
    for (const id of vms) await driver.destroy(id).catch(() => {});
    await driver.close();
    await store.close();
  }
});
