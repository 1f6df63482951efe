/**
 * Two libvirt hosts that share nothing but their connections (scripts/libvirt/test-host.sh: a
 * second and third libvirtd on this machine, each with its own state and its own pool
 * directory), with real VMs: each VM's volumes are in its host's pool only, a template reaches
 * a host once, live and cold migration, a backup restored after its VM moved, and a migration
 * whose destination stops answering.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import type { VmSpec } from '../../src/drivers/driver.ts';
import { openStore } from '../../src/store/database.ts';
import { slowWaitMs, waitUntil } from '../helpers/budget.ts';
import { guestReports, poolVolumes, removeTemplateVolumes } from '../helpers/libvirt.ts';
import { libvirtTemplate, noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const script = join(import.meta.dirname, '../../scripts/libvirt/test-host.sh');
const skip = noLibvirtTemplate || (!existsSync(script) && 'needs scripts/libvirt/test-host.sh');

/** Starts a test host; its URI (the script's last line). */
function startHost(name: string): string {
  const out = execFileSync('bash', [script, 'start', name], { encoding: 'utf8' }).trim().split('\n');
  return out[out.length - 1] ?? '';
}
const stopHost = (name: string) => execFileSync('bash', [script, 'stop', name], { stdio: 'ignore' });

const spec = (vmId: string): VmSpec => ({
  vmId,
  hostname: 'moving.example.com',
  username: 'root',
  password: 'Moving-pass-1',
  templateId: 'tiny',
  cpu: 1,
  ramGb: 1,
  diskGb: 1,
  ipCount: 1,
});

test('two hosts, each with its own pool: placement, template once per host, live and cold migration, backups across hosts, a failed migration', {
  skip,
  timeout: slowWaitMs(1_800_000),
}, async () => {
  const suffix = String(process.pid);
  const names = { a: `vrpa${suffix}`, b: `vrpb${suffix}` };
  const uriA = startHost(names.a);
  const uriB = startHost(names.b);
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-lvhosts-'));
  const store = await openStore({ databaseUrl: undefined, dataDir });
  let bStopped = false;
  after(() => {
    for (const n of [names.a, names.b]) {
      try {
        stopHost(n);
      } catch {
        // Stopped already.
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  });
  await store.db
    .insertInto('os_templates')
    .values({ id: 'tiny', name: 'tiny', image: libvirtTemplate ?? '', created_at: 0, updated_at: 0 })
    .execute();
  const commands: string[] = [];
  const driver = await createDriver(
    loadConfig({
      VRP_DATA_DIR: dataDir,
      VRP_DRIVER: 'libvirt',
      VRP_LIBVIRT_HOSTS: `a,${uriA},4,8,100;b,${uriB},4,8,100`,
    }),
    store.db,
    {
      info() {},
      debug(obj) {
        commands.push((obj as { command: string }).command);
      },
    },
  );
  const uploads = () => commands.filter((c) => c === 'virsh vol-upload').length;
  const setState = (id: string, state: 'active' | 'draining') =>
    store.db.updateTable('hypervisor_hosts').set({ state }).where('id', '=', id).execute();
  const used = async (id: string) =>
    (
      await store.db
        .selectFrom('hypervisor_hosts')
        .select(['used_cpu', 'used_ram_gb', 'used_disk_gb'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).used_ram_gb;
  const report = (vmId: string, uri: string, boot: string) =>
    waitUntil(`boot ${boot} of ${vmId}`, () => guestReports(vmId, uri).find((r) => r['boot'] === boot), {
      everyMs: 500,
      budgetMs: slowWaitMs(240_000),
    });
  const vm1 = '0d0d0d0d-0000-4000-8000-000000000001';
  const vm2 = '0d0d0d0d-0000-4000-8000-000000000002';
  try {
    // Both VMs on A (B takes none while draining).
    await setState('b', 'draining');
    const first = await driver.create(spec(vm1));
    assert.equal(first.hostId, 'a');
    assert.equal(uploads(), 4, 'the template (disk, kernel, initrd) and the seed reached A');
    assert.ok(poolVolumes(uriA).includes(`${vm1}.qcow2`), "the disk is a volume of A's pool");
    assert.ok(!poolVolumes(uriB).includes(`${vm1}.qcow2`), "not of B's");
    assert.ok(!poolVolumes('qemu:///system').includes(`${vm1}.qcow2`), "nor of the system libvirt's");
    const row = await store.db.selectFrom('host_images').selectAll().where('host_id', '=', 'a').execute();
    assert.equal(row.length, 1, 'the upload is recorded, with its checksum');
    assert.match(row[0]?.sha256 ?? '', /^[0-9a-f]{64}$/);
    await report(vm1, uriA, '1');
    const before = uploads();
    assert.equal((await driver.create(spec(vm2))).hostId, 'a');
    assert.equal(uploads() - before, 1, 'the second VM on A uploads its seed only, not the template');
    await setState('b', 'active');

    // A backup on A, then VM 1 moves live to B and keeps running the same boot.
    await driver.createBackup(vm1, 'backup-on-a');
    assert.ok(poolVolumes(uriA).includes('backup-backup-on-a.qcow2'));
    const moved = await driver.migrate(vm1, 'b');
    assert.deepEqual([moved.hostId, moved.power], ['b', 'running']);
    assert.ok(poolVolumes(uriB).includes(`${vm1}.qcow2`), 'the disk came along');
    assert.ok(!poolVolumes(uriA).includes(`${vm1}.qcow2`), "and left A's pool");
    assert.deepEqual([await used('a'), await used('b')], [1, 1], 'its room moved with it');
    await driver.reboot(vm1);
    const second = await report(vm1, uriB, '2');
    assert.equal(
      second['boot'],
      '2',
      'the next boot is the second: the guest never restarted while it moved',
    );

    // The backup taken on A restores on B (streamed through this process).
    await driver.restoreBackup(vm1, 'backup-on-a');
    await report(vm1, uriB, '2');
    assert.equal(
      guestReports(vm1, uriB).filter((r) => r['boot'] === '2').length,
      2,
      'the disk went back to the backup (one boot), so this boot is the second again',
    );

    // Cold back to A.
    await driver.stop(vm1, { timeoutMs: 1000 });
    const back = await driver.migrate(vm1, 'a');
    assert.deepEqual([back.hostId, back.power], ['a', 'stopped']);
    assert.ok(poolVolumes(uriA).includes(`${vm1}.qcow2`));
    assert.ok(!poolVolumes(uriB).includes(`${vm1}.qcow2`));
    assert.equal((await driver.start(vm1)).power, 'running');
    await report(vm1, uriA, '3');

    // B stops answering: the migration fails, VM 2 runs on A, B's reservation is given back.
    stopHost(names.b);
    bStopped = true;
    await assert.rejects(driver.migrate(vm2, 'b'));
    const after2 = await driver.inspect(vm2);
    assert.deepEqual([after2?.hostId, after2?.power], ['a', 'running']);
    assert.equal(await used('b'), 0, "B's reservation was given back");
    const rowAfter = await store.db
      .selectFrom('libvirt_vms')
      .select('migrating_to')
      .where('id', '=', vm2)
      .executeTakeFirstOrThrow();
    assert.equal(rowAfter.migrating_to, null);

    await driver.deleteBackup(vm1, 'backup-on-a');
    assert.ok(!poolVolumes(uriA).includes('backup-backup-on-a.qcow2'), 'deleted where it was');
    await driver.destroy(vm1);
    await driver.destroy(vm2);
    assert.deepEqual(
      poolVolumes(uriA).filter((n) => !n.startsWith('template-')),
      [],
      "nothing of the VMs is left in A's pool",
    );
  } finally {
    if (!bStopped) await removeTemplateVolumes(store.db);
    await driver.close();
    await store.close();
  }
});
