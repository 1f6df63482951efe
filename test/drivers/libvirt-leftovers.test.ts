/**
 * A migration whose old host fails its clean-up, on two libvirt test hosts that share nothing
 * (scripts/libvirt/test-host.sh): the VM moves all the same, its old copy (the seed with the
 * password in clear among it) is recorded and later removed by a pass over that host, a
 * migration back waits while a pass holds that copy and otherwise takes it over, and no pass
 * touches the VM where it is. A wrapper ahead of `virsh` on PATH (test/helpers/virsh-wrapper.ts)
 * refuses the deletion of the VM's seed on the chosen host; every other command is the real virsh's.
 * Runs where VRP_TEST_LIBVIRT_TEMPLATE names the test template.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { slowWaitMs } from '../helpers/budget.ts';
import { libvirtDriverOnStore, poolVolumes, startTestHost, testHostScript } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';
import { installVirshWrapper } from '../helpers/virsh-wrapper.ts';

const skip = noLibvirtTemplate || (!existsSync(testHostScript) && 'needs scripts/libvirt/test-host.sh');
/** The capacity of a volume of the pool on the host at `uri`, in bytes. */
function diskBytesOf(uri: string, volume: string): number {
  const out = execFileSync('virsh', ['-c', uri, 'vol-info', '--bytes', '--pool', 'vrp', volume], {
    encoding: 'utf8',
  });
  return Number(/^Capacity:\s+(\d+)/m.exec(out)?.[1] ?? Number.NaN);
}
const domains = (uri: string) =>
  execFileSync('virsh', ['-c', uri, 'list', '--all', '--name'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);

test('a migration whose old host keeps the VM: recorded, removed by a pass, taken over by a migration back', {
  skip,
  timeout: slowWaitMs(900_000),
}, async () => {
  const suffix = String(process.pid);
  const names = { a: `vrpla${suffix}`, b: `vrplb${suffix}` };
  const hostA = await startTestHost(names.a);
  const hostB = await startTestHost(names.b);
  const [uriA, uriB] = [hostA.uri, hostB.uri];
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-leftovers-'));
  const wrapper = installVirshWrapper();
  const vmId = randomUUID();
  const seed = `${vmId}.seed.iso`;
  const diskBytes = (uri: string) => diskBytesOf(uri, `${vmId}.qcow2`);
  const mine = (uri: string) => poolVolumes(uri).filter((v) => v.startsWith(vmId));
  after(async () => {
    wrapper.remove();
    for (const h of [hostA, hostB]) await h.stop().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  });

  // `refuse(host name)`: the VM's seed cannot be deleted on that host.
  const refuse = (name: string) => wrapper.refuse(['vol-delete', seed, name]);
  const allow = () => wrapper.allow();

  const warned: Record<string, unknown>[] = [];
  const { store, driver } = await libvirtDriverOnStore(
    dataDir,
    { VRP_LIBVIRT_HOSTS: `a,${uriA},4,8,100;b,${uriB},4,8,100` },
    {
      info() {},
      debug() {},
      warn(obj) {
        warned.push({ ...obj });
      },
      error() {},
    },
  );
  const clear = (hostId: string) => {
    assert.ok(driver.clearLeftovers);
    return driver.clearLeftovers(hostId);
  };
  const leftovers = () =>
    store.db.selectFrom('libvirt_leftovers').select(['host_id', 'vm_id']).orderBy('host_id').execute();
  const placed = () =>
    store.db
      .selectFrom('libvirt_vms')
      .select(['host_id', 'migrating_to'])
      .where('id', '=', vmId)
      .executeTakeFirstOrThrow();
  try {
    // On host a (b draining meanwhile), and off: a cold move is all this needs.
    await store.db.updateTable('hypervisor_hosts').set({ state: 'draining' }).where('id', '=', 'b').execute();
    const made = await driver.create({
      vmId,
      hostname: 'leftover.example.com',
      username: 'root',
      password: 'Left-over-pass-1',
      templateId: 'tiny',
      cpu: 1,
      ramGb: 1,
      diskGb: 1,
      ipCount: 1,
    });
    assert.equal(made.hostId, 'a');
    await store.db.updateTable('hypervisor_hosts').set({ state: 'active' }).where('id', '=', 'b').execute();
    await driver.powerOff(vmId);

    // 1. The old host refuses its clean-up: the VM has moved all the same, its old copy is recorded.
    refuse(names.a);
    const moved = await driver.migrate(vmId, 'b');
    assert.equal(moved.hostId, 'b');
    assert.deepEqual(await placed(), { host_id: 'b', migrating_to: null });
    assert.ok(mine(uriA).includes(seed), 'the seed is still on the old host');
    assert.ok(mine(uriB).includes(seed) && mine(uriB).includes(`${vmId}.qcow2`), 'the VM is whole on b');
    assert.deepEqual(await leftovers(), [{ host_id: 'a', vm_id: vmId }]);
    assert.deepEqual(
      warned.map((w) => [w['vmId'], w['hostId']]),
      [[vmId, 'a']],
      'the leftover is told at warn',
    );

    // A pass while the host still refuses: the copy stays recorded, with the reason.
    const refused = await clear('a');
    assert.deepEqual(refused.cleared, []);
    assert.equal(refused.failed[0]?.vmId, vmId);
    assert.match(refused.failed[0]?.error ?? '', /Could not delete a storage volume/);
    assert.deepEqual(await leftovers(), [{ host_id: 'a', vm_id: vmId }]);

    // 2. A migration back while a pass holds that copy waits (transient), and changes nothing.
    await store.db
      .updateTable('libvirt_leftovers')
      .set({ claimed_until: Date.now() + 3_600_000 })
      .where('host_id', '=', 'a')
      .execute();
    await assert.rejects(driver.migrate(vmId, 'a'), (err: unknown) => {
      assert.ok(err instanceof DriverError && err.transient);
      assert.match(err.message, /old copy on host a is being removed/);
      return true;
    });
    assert.deepEqual(await placed(), { host_id: 'b', migrating_to: null });
    assert.deepEqual(
      await clear('a'),
      { cleared: [], failed: [] },
      'a held copy is not taken by another pass',
    );

    // 3. Its hold run out and the host answering again: the next pass removes the copy.
    await store.db
      .updateTable('libvirt_leftovers')
      .set({ claimed_until: 1 })
      .where('host_id', '=', 'a')
      .execute();
    allow();
    assert.deepEqual(await clear('a'), { cleared: [vmId], failed: [] });
    assert.deepEqual(mine(uriA), [], 'nothing of the VM is left on a');
    assert.ok(!domains(uriA).includes(`vrp-${vmId}`));
    assert.deepEqual(await leftovers(), []);
    assert.ok(mine(uriB).includes(seed), 'the VM on b is untouched');

    // 4. Back to a, b refusing this time: b keeps a copy. It is given a domain (as a cold move's
    // that defined it there and then failed would leave) and a disk unlike the VM's (3 GiB).
    // The migration to b must remove that copy first, not take it for its own move's: on b the
    // VM has its own 1 GiB disk, and a's copy goes as the move ends.
    refuse(names.b);
    assert.equal((await driver.migrate(vmId, 'a')).hostId, 'a');
    assert.deepEqual(await leftovers(), [{ host_id: 'b', vm_id: vmId }]);
    allow();
    const xml = join(dataDir, 'old-copy.xml');
    writeFileSync(
      xml,
      execFileSync('virsh', ['-c', uriA, 'dumpxml', '--inactive', `vrp-${vmId}`], { encoding: 'utf8' }),
    );
    execFileSync('virsh', ['-c', uriB, 'define', xml], { stdio: 'ignore' });
    execFileSync('virsh', ['-c', uriB, 'vol-resize', '--pool', 'vrp', `${vmId}.qcow2`, '3G'], {
      stdio: 'ignore',
    });
    assert.equal(diskBytes(uriB), 3 * 2 ** 30);
    const there = await driver.migrate(vmId, 'b');
    assert.equal(there.hostId, 'b');
    assert.equal(there.power, 'stopped');
    assert.equal(diskBytes(uriB), 2 ** 30, "the VM's own disk on b, not the old copy's");
    assert.deepEqual(await leftovers(), [], 'the old copy and its record are gone');
    assert.deepEqual(await clear('b'), { cleared: [], failed: [] });
    assert.ok(mine(uriB).includes(seed) && mine(uriB).includes(`${vmId}.qcow2`));
    assert.equal((await driver.inspect(vmId))?.hostId, 'b');
    assert.deepEqual(mine(uriA), [], 'the clean-up of a worked this time');
    assert.ok(!domains(uriA).includes(`vrp-${vmId}`));
  } finally {
    await driver.destroy(vmId).catch(() => {});
    await driver.close();
    await store.close();
  }
});
