/**
 * A host's template copies that no VM uses go, on a libvirt test host of its own
 * (scripts/libvirt/test-host.sh) with real VMs: the catalogue's image changes (another
 * checksum), so the next VM brings a second upload and the host's record names it. The first
 * upload stays while a VM boots its kernel, even once that VM's disk stands alone (as after a
 * restore), while it is off and while it runs a rescue system (only its next-boot definition
 * names the upload then), and goes once that VM is gone; an upload no record names and nothing
 * uses (a worker died mid-upload) goes;
 * a host whose domains cannot all be read has nothing removed, one without a pool has nothing to
 * sweep, one whose listing fails gives no answer; the VM on the new upload runs on; a volume whose
 * file went behind libvirt's back does not stop the sweep.
 * Runs where VRP_TEST_LIBVIRT_TEMPLATE names the test template.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { createCommands } from '../../src/drivers/libvirt/commands.ts';
import { createPoolStorage } from '../../src/drivers/libvirt/storage.ts';
import { uploadsNamedOnHost } from '../../src/drivers/libvirt/template-sweep.ts';
import { slowWaitMs } from '../helpers/budget.ts';
import { libvirtDriverOnStore, poolVolumes, startTestHost, testHostScript } from '../helpers/libvirt.ts';
import { libvirtTemplate, noLibvirtTemplate } from '../helpers/libvirt-template.ts';
import { installVirshWrapper } from '../helpers/virsh-wrapper.ts';

const skip = noLibvirtTemplate || (!existsSync(testHostScript) && 'needs scripts/libvirt/test-host.sh');

test('template copies no VM uses are removed from the host; those in use and the recorded ones stay', {
  skip,
  timeout: slowWaitMs(900_000),
}, async () => {
  const host = await startTestHost(`vrpts${process.pid}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-template-sweep-'));
  const wrapper = installVirshWrapper();
  after(async () => {
    wrapper.remove();
    await host.stop().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { store, driver } = await libvirtDriverOnStore(
    dataDir,
    { VRP_LIBVIRT_HOSTS: `a,${host.uri},4,8,100`, VRP_RESCUE_IMAGE: libvirtTemplate ?? '' },
    undefined,
    // No grace: what is unused goes at the first look (no operator may set this: 14 h at least).
    { templateSweepGraceMs: 0 },
  );
  const sweep = () => {
    assert.ok(driver.clearUnusedTemplates);
    return driver.clearUnusedTemplates('a');
  };
  const templates = () => poolVolumes(host.uri).filter((v) => v.startsWith('template-'));
  const recorded = async (templateId: string) =>
    (
      await store.db
        .selectFrom('host_images')
        .select('volume')
        .where('host_id', '=', 'a')
        .where('template_id', '=', templateId)
        .executeTakeFirstOrThrow()
    ).volume.replace(/\.qcow2$/, '');
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
  const parts = (u: string) => [`${u}.initrd`, `${u}.qcow2`, `${u}.vmlinuz`];
  const commands = createCommands();
  // cloneFlat, remove and list name volumes of the pool, not paths.
  const pool = createPoolStorage(commands, '/var/lib/vrp/pool');
  const named = () =>
    uploadsNamedOnHost(
      { virsh: commands.virsh, list: (u) => pool.list(u), refresh: (u, w) => pool.refresh(u, w) },
      host.uri,
    );
  const vms: string[] = [];
  try {
    // A host whose pool is not made yet (libvirt's words for it) has nothing to sweep; a listing
    // that fails otherwise (the connection lost) is no answer, and the pass logs it.
    wrapper.refuse(
      ['vol-list'],
      "error: failed to get pool 'vrp'\nerror: Storage pool not found: no storage pool with matching name 'vrp'",
    );
    assert.deepEqual(await sweep(), { removed: [], failed: [] });
    wrapper.refuse(['vol-list']);
    await assert.rejects(sweep(), /Could not list the storage volumes/);
    wrapper.allow();

    // A worker that died mid-upload: a volume of an upload no record names, nothing uses.
    const stray = 'template-tiny-000000000000-deadbeef.qcow2';
    execFileSync('virsh', ['-c', host.uri, 'vol-create-as', 'vrp', stray, '1M', '--format', 'qcow2'], {
      stdio: 'ignore',
    });

    const first = order('first.example.com');
    vms.push(first.vmId);
    await driver.create(first);
    const old = await recorded('tiny');

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
    const current = await recorded('tiny');
    assert.notEqual(current, old, 'the changed image is a second upload, and the record names it');

    // The first VM's disk made to stand alone (as a restore leaves it), the VM off: only its
    // domain's definition (its kernel and initrd) names the old upload now.
    await driver.powerOff(first.vmId);
    const disk = `${first.vmId}.qcow2`;
    await pool.cloneFlat(host.uri, disk, `${first.vmId}-flat.qcow2`);
    await pool.remove(host.uri, disk);
    await pool.cloneFlat(host.uri, `${first.vmId}-flat.qcow2`, disk);
    await pool.remove(host.uri, `${first.vmId}-flat.qcow2`);
    const { stdout: diskXml } = await commands.virsh(
      host.uri,
      ['vol-dumpxml', '--pool', 'vrp', disk],
      'read',
    );
    assert.ok(!diskXml.includes('template-'), 'the disk has no backing file');
    assert.ok((await named()).has(old), 'named by the off domain alone');

    // Then in rescue: its live definition boots the rescue image's upload, and only its
    // next-boot definition names the old upload.
    await driver.rescue(first.vmId, { username: 'root', password: 'Rescue-password-1' });
    const rescue = await recorded('rescue');
    assert.deepEqual(templates().sort(), [...parts(current), ...parts(old), ...parts(rescue), stray].sort());
    const inRescue = await named();
    for (const u of [old, current, rescue]) assert.ok(inRescue.has(u), `${u} named`);

    // The stray upload goes; the old one (a VM boots its kernel), the current and the rescue ones stay.
    assert.deepEqual(await sweep(), { removed: [stray], failed: [] });
    assert.deepEqual(templates().sort(), [...parts(current), ...parts(old), ...parts(rescue)].sort());

    // The first VM gone: the old upload goes at the next look, its disk last; but not while a
    // domain of the host cannot be read (libvirt's words for a lookup that failed, though the
    // domain is there): the look fails and removes nothing.
    await driver.destroy(first.vmId);
    // (The look reads domains by UUID.)
    const uuid = execFileSync('virsh', ['-c', host.uri, 'domuuid', `vrp-${second.vmId}`], {
      encoding: 'utf8',
    }).trim();
    wrapper.refuse(['dumpxml', uuid], `error: failed to get domain '${uuid}'`);
    await assert.rejects(sweep(), (err: unknown) => {
      assert.ok(err instanceof DriverError && err.transient, String(err));
      assert.match(err.message, /though it is there/);
      return true;
    });
    wrapper.allow();
    assert.deepEqual(templates().sort(), [...parts(current), ...parts(old), ...parts(rescue)].sort());
    assert.deepEqual(await sweep(), {
      removed: [`${old}.initrd`, `${old}.vmlinuz`, `${old}.qcow2`],
      failed: [],
    });
    assert.deepEqual(templates().sort(), [...parts(current), ...parts(rescue)].sort());

    // The VM on the new upload runs on; later looks remove nothing more.
    assert.equal((await driver.inspect(second.vmId))?.power, 'running');
    assert.deepEqual(await sweep(), { removed: [], failed: [] });
    assert.deepEqual(templates().sort(), [...parts(current), ...parts(rescue)].sort());

    // A volume whose file was removed behind libvirt's back stays in the pool's listing and cannot
    // be read; the look reads the pool again, and it names nothing: another stray upload goes.
    const virsh = (...args: string[]) =>
      execFileSync('virsh', ['-c', host.uri, ...args], { stdio: 'ignore' });
    virsh('vol-create-as', 'vrp', 'stale.qcow2', '1M', '--format', 'qcow2');
    rmSync(join(host.dir, 'storage', 'stale.qcow2'));
    assert.ok(poolVolumes(host.uri).includes('stale.qcow2'), 'still listed');
    const another = 'template-tiny-000000000000-feedface.qcow2';
    virsh('vol-create-as', 'vrp', another, '1M', '--format', 'qcow2');
    assert.deepEqual(await sweep(), { removed: [another], failed: [] });
    assert.ok(!poolVolumes(host.uri).includes('stale.qcow2'), 'gone from the listing');
    assert.deepEqual(templates().sort(), [...parts(current), ...parts(rescue)].sort());
  } finally {
    await commands.close();
    for (const id of vms) await driver.destroy(id).catch(() => {});
    await driver.close();
    await store.close();
  }
});
