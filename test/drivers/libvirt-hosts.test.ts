/**
 * Two libvirt hosts that share nothing but their connections (scripts/libvirt/test-host.sh: a
 * second and third libvirtd on this machine, each with its own state and its own pool
 * directory), with one real VM: its volumes are in its host's pool only, it moves live and
 * keeps running the same boot, moves back cold with its disk (refused first, for good and before
 * any copy, while this process's temporary directory cannot hold the disk), a disk exported before it moved
 * imports after (the VM runs on the other host with it), and migrations whose destination does not answer (before the move,
 * stopped while libvirt's migration job runs, and its QEMU taking no more data: ended once nothing
 * moves for the stall window) leave it running where it was; a domain of it stopped on the
 * destination without its disk is not taken for a finished cold copy, and a cold move whose
 * template copy there is removed meanwhile fails before defining it (one whose pool there was
 * undefined by hand goes through, the pool prepared again); a live move
 * that switched over, with its source left paused and its guest stopped on the destination since,
 * is taken for moved, not made again; a guest that suspended itself is woken and moves live; a
 * host whose power is cut boots the VM that ran on it again, and not once it was stopped; a stopped VM whose
 * disk volume is gone is refused its move for good and stays where it was.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { DriverError, type VmSpec } from '../../src/drivers/driver.ts';
import { FenceDown, fenced } from '../../src/drivers/fence.ts';
import { reserveDestination } from '../../src/drivers/hosts.ts';
import { openStore } from '../../src/store/database.ts';
import { slowWaitMs, waitUntil } from '../helpers/budget.ts';
import { diskImage } from '../helpers/disk-image.ts';
import {
  guestExecWhenUp,
  guestReports,
  guestSpawn,
  guestWait,
  poolVolumes,
  processesWhere,
  removeTemplateVolumes,
  withFullTmpdir,
} from '../helpers/libvirt.ts';
import { libvirtTemplate, noLibvirtTemplate } from '../helpers/libvirt-template.ts';
import { installVirshWrapper } from '../helpers/virsh-wrapper.ts';

const script = join(import.meta.dirname, '../../scripts/libvirt/test-host.sh');
const skip = noLibvirtTemplate || (!existsSync(script) && 'needs scripts/libvirt/test-host.sh');

/** Starts a test host; its URI (the script's last line). */
function startHost(name: string): string {
  const out = execFileSync('bash', [script, 'start', name], { encoding: 'utf8' }).trim().split('\n');
  return out[out.length - 1] ?? '';
}
const stopHost = (name: string) => execFileSync('bash', [script, 'stop', name], { stdio: 'ignore' });
/** Cuts a test host's power and boots it again (its processes killed, its libvirtd started over its files). */
const powerCycle = (name: string) => execFileSync('bash', [script, 'power-cycle', name], { stdio: 'ignore' });
const execFileAsync = promisify(execFile);
const virshOut = (uri: string, ...args: string[]) =>
  execFileSync('virsh', ['-c', uri, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

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

test('two hosts, each with its own pool: placement, live and cold migration, backups across hosts, failed migrations, probe', {
  skip,
  timeout: slowWaitMs(1_800_000),
}, async (t) => {
  const suffix = String(process.pid);
  const names = { a: `vrpa${suffix}`, b: `vrpb${suffix}` };
  const uriA = startHost(names.a);
  const uriB = startHost(names.b);
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-lvhosts-'));
  const store = await openStore({ databaseUrl: undefined, dataDir });
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
  const migrations: Record<string, unknown>[] = [];
  /** The settings of this test's drivers: both hosts, a short graceful stop. */
  const env = {
    VRP_DATA_DIR: dataDir,
    VRP_DRIVER: 'libvirt',
    VRP_LIBVIRT_HOSTS: `a,${uriA},4,8,100;b,${uriB},4,8,100`,
    VRP_STOP_TIMEOUT: '3s',
  };
  const driver = await createDriver(loadConfig(env), store.db, {
    info(obj, msg) {
      if (msg === 'libvirt migration') migrations.push({ ...obj });
    },
    debug(obj) {
      commands.push((obj as { command: string }).command);
    },
    warn() {},
    error() {},
  });
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
  const vmRow = async (id: string) => ({
    ...(await store.db
      .selectFrom('libvirt_vms')
      .select(['host_id', 'migrating_to'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()),
  });
  /** The guest's reports of boot `boot` on its console, once there are `count` of them. */
  const reports = (vmId: string, uri: string, boot: string, count = 1) =>
    guestWait(
      `${count} report(s) of boot ${boot} of ${vmId}`,
      vmId,
      (all) => {
        const found = all.filter((r) => r['boot'] === boot);
        return found.length >= count ? found : undefined;
      },
      { uri, everyMs: 500, budgetMs: slowWaitMs(240_000) },
    );
  /** The first boot report of vm1 on its console at `uri` after the `after` it had. */
  const nextReport = (uri: string, after: number) =>
    guestWait(
      `a boot report of ${vm1} after its ${after}`,
      vm1,
      (all) => (all.length > after ? all[after] : undefined),
      { uri, everyMs: 500, budgetMs: slowWaitMs(240_000) },
    ).then((r) => r ?? {});
  const vmFiles = (vmId: string) => [`${vmId}.qcow2`, `${vmId}.seed.iso`, `${vmId}.console.log`];
  const domains = (uri: string) => virshOut(uri, 'list', '--all', '--name').split('\n').filter(Boolean);
  const vm1 = '0d0d0d0d-0000-4000-8000-000000000001';
  const dom = `vrp-${vm1}`;
  /**
   * Once A's migration job of the VM is sending its memory to B (the disk copied): the bytes of
   * memory sent so far. Fails if `moving` (the move) ends first.
   */
  const memoryMoving = (moving: Promise<unknown>) =>
    waitUntil(
      "the guest's memory moving to B",
      async () => {
        const settled = await Promise.race([moving, Promise.resolve('pending')]);
        if (settled !== 'pending') assert.fail(`the move ended before the memory moved: ${String(settled)}`);
        const { stdout } = await execFileAsync('virsh', ['-c', uriA, 'domjobinfo', '--rawstats', dom]).catch(
          () => ({ stdout: '' }),
        );
        const memory = Number(/^memory_processed:\s*(\d+)/m.exec(stdout)?.[1] ?? 0);
        return memory > 0 ? memory : undefined;
      },
      { everyMs: 50, budgetMs: slowWaitMs(600_000) },
    );
  try {
    // (a) Created on A (B takes none while draining): its volumes are in A's pool only.
    await setState('b', 'draining');
    const first = await driver.create(spec(vm1));
    assert.equal(first.hostId, 'a');
    assert.equal(uploads(), 4, 'the template (disk, kernel, initrd) and the seed reached A');
    for (const f of vmFiles(vm1)) {
      assert.ok(poolVolumes(uriA).includes(f), `${f} is a volume of A's pool`);
      assert.ok(!poolVolumes(uriB).includes(f), `${f} is not in B's`);
      assert.ok(!poolVolumes('qemu:///system').includes(f), `${f} is not in the system libvirt's`);
    }
    const imageRows = await store.db
      .selectFrom('host_images')
      .selectAll()
      .where('host_id', '=', 'a')
      .execute();
    assert.equal(imageRows.length, 1, 'the upload is recorded, with its checksum');
    assert.match(imageRows[0]?.sha256 ?? '', /^[0-9a-f]{64}$/);
    const [boot1] = await reports(vm1, uriA, '1');
    assert.equal(boot1?.['ips'], `${first.ips.join(',')},`, 'the guest has the addresses it was given');
    await setState('b', 'active');

    // (d, first half) A backup taken on A: the disk exported live (a full export) and kept here,
    // as the backup store would keep it; nothing of it stays in A's pool.
    const onA = await driver.exportDisk(vm1, 'backup-on-a', null);
    assert.equal(onA.kind, 'full');
    const backupImage = diskImage(join(dataDir, 'backup-on-a.img'), onA.diskBytes);
    try {
      const carried = await backupImage.apply(onA);
      assert.ok(carried.bytes > 0, 'the export carries the disk');
      await onA.commit();
    } finally {
      await onA.close();
    }
    assert.deepEqual(
      poolVolumes(uriA).filter((n) => !n.startsWith('template-') && !vmFiles(vm1).includes(n)),
      [],
      "the export left nothing in A's pool",
    );
    assert.equal((await driver.inspect(vm1))?.power, 'running', 'the export did not stop the VM');

    // (b) Live to B: the same guest goes on running there, with its addresses and its room.
    const moved = await driver.migrate(vm1, 'b');
    assert.deepEqual([moved.hostId, moved.power], ['b', 'running']);
    assert.deepEqual(moved.ips, first.ips, 'its addresses are unchanged');
    assert.deepEqual(await vmRow(vm1), { host_id: 'b', migrating_to: null }, "the VM's row is on B");
    assert.deepEqual([await used('a'), await used('b')], [0, 1], 'its room moved with it');
    for (const f of vmFiles(vm1)) {
      assert.ok(poolVolumes(uriB).includes(f), `${f} came along`);
      assert.ok(!poolVolumes(uriA).includes(f), `${f} left A's pool`);
    }
    assert.ok(!domains(uriA).includes(dom), 'the domain is gone from A');
    assert.ok(domains(uriB).includes(dom), 'and defined on B (persistent)');
    assert.match(virshOut(uriB, 'dominfo', dom), /^Autostart:\s+enable/m, 'marked to start with B');
    assert.equal(migrations.length, 1, 'the migration was logged at info');
    assert.equal(migrations[0]?.['live'], true);
    assert.equal(typeof migrations[0]?.['downtime_ms'], 'number', "with the guest's pause");
    assert.equal(typeof migrations[0]?.['total_ms'], 'number');
    // The guest never restarted: its console (now on B) has the one boot, and its own boot
    // counter on its disk goes from 1 to 2 at the next boot.
    assert.deepEqual(
      guestReports(vm1, uriB).map((r) => r['boot']),
      ['1'],
      'one boot so far',
    );
    await driver.reboot(vm1);
    const [boot2] = await reports(vm1, uriB, '2');
    assert.equal(boot2?.['ips'], boot1?.['ips'], 'the guest sees the same addresses on B');

    // (d) The backup taken on A imported on B (its runs streamed from this process): the VM
    // runs on B with that disk, back to one boot, so the next boot is the second again.
    await driver.importDisk(vm1, backupImage.diskBytes, backupImage.runs());
    const restored = await driver.inspect(vm1);
    assert.deepEqual(
      [restored?.hostId, restored?.power],
      ['b', 'running'],
      'running on B with the imported disk',
    );
    await reports(vm1, uriB, '2', 2);
    // The checkpoint stayed on A's disk: the next export on B is full.
    const onB = await driver.exportDisk(vm1, 'after-import', 'backup-on-a');
    assert.equal(onB.kind, 'full', 'the export after the import is full');
    await onB.close();
    await driver.dropCheckpoint(vm1, 'backup-on-a');

    // (c, refused) A stopped VM's move passes its disk through this process's temporary
    // directory: where that cannot hold it (here a full 1 MiB tmpfs), the move is refused for
    // good before anything is copied, saying where, and the VM stays on B as it was.
    await driver.stop(vm1, { timeoutMs: 3000 });
    const uploadsBefore = uploads();
    await withFullTmpdir(() =>
      assert.rejects(driver.migrate(vm1, 'a'), (err: unknown) => {
        assert.ok(err instanceof DriverError && !err.transient, String(err));
        assert.match(
          err.message,
          /^The temporary directory of the vrp process that copies \(TMPDIR\) has 0\.0 MiB free; the copy needs about (\d+\.\d) MiB and \1 MiB kept free; the migration under way was undone, the server stays on its host$/,
        );
        return true;
      }),
    );
    assert.deepEqual(await vmRow(vm1), { host_id: 'b', migrating_to: null });
    assert.deepEqual([await used('a'), await used('b')], [0, 1], "A's reservation was given back");
    assert.equal(uploads(), uploadsBefore, 'nothing was copied');
    assert.ok(!poolVolumes(uriB).includes(`${vm1}.migrating.qcow2`), 'no copy of the disk was made on B');
    assert.equal((await driver.inspect(vm1))?.power, 'stopped');

    // (c) Cold back to A: it starts there with its disk (the guest's boot counter goes on).
    const back = await driver.migrate(vm1, 'a');
    assert.deepEqual([back.hostId, back.power], ['a', 'stopped']);
    assert.deepEqual(back.ips, first.ips);
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.deepEqual([await used('a'), await used('b')], [1, 0]);
    assert.equal(uploads() - uploadsBefore, 3, 'the seed, the console log and the disk: A has the template');
    for (const f of vmFiles(vm1)) {
      assert.ok(poolVolumes(uriA).includes(f), `${f} is back on A`);
      assert.ok(!poolVolumes(uriB).includes(f), `${f} left B's pool`);
    }
    assert.ok(!domains(uriB).includes(dom), 'the domain is gone from B');
    assert.equal(migrations[1]?.['live'], false);
    assert.equal((await driver.start(vm1)).power, 'running');
    await reports(vm1, uriA, '3');
    // The disk it came back with holds checkpoints (a qcow2 v3): the export after the first is
    // incremental.
    const firstOnA = await driver.exportDisk(vm1, 'cold-1', null);
    assert.equal(firstOnA.kind, 'full');
    await firstOnA.commit();
    await firstOnA.close();
    const nextOnA = await driver.exportDisk(vm1, 'cold-2', 'cold-1');
    assert.equal(nextOnA.kind, 'incremental', 'backups after a cold migration are incremental');
    await nextOnA.close();
    await driver.dropCheckpoint(vm1, 'cold-1');
    const domId = virshOut(uriA, 'domid', dom).trim();

    // (e) B does not answer before the move: the VM stays running on A, B's room is given back.
    stopHost(names.b);
    await assert.rejects(driver.migrate(vm1, 'b'));
    const afterDown = await driver.inspect(vm1);
    assert.deepEqual([afterDown?.hostId, afterDown?.power], ['a', 'running']);
    assert.equal(await used('b'), 0, "B's reservation was given back");
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });

    // (f) The probe fails while B is stopped, and succeeds once it runs again.
    await assert.rejects(driver.probe('b'));
    startHost(names.b);
    await driver.probe('b');

    // (g) An attempt reserved room on B and died before it copied anything (its reservation
    // left as it wrote it), and B has been drained since: the re-run undoes the move and fails,
    // saying why; the VM runs on A as it did. The same reservation left by a job that was given
    // up is settled by abandonMigration.
    const reserveOnB = async () => {
      const vm = await store.db
        .selectFrom('libvirt_vms')
        .select(['cpu', 'ram_gb', 'disk_gb'])
        .where('id', '=', vm1)
        .executeTakeFirstOrThrow();
      // As the driver's first attempt reserves: the rule's reservation and the mark, together.
      await store.db.transaction().execute(async (tx) => {
        const need = { cpu: vm.cpu, ramGb: vm.ram_gb, diskGb: vm.disk_gb };
        const to = await reserveDestination(tx, need, 'libvirt', 'a', 'b');
        await tx.updateTable('libvirt_vms').set({ migrating_to: to }).where('id', '=', vm1).execute();
      });
      assert.ok((await used('b')) > 0);
    };
    await reserveOnB();
    await setState('b', 'draining');
    await assert.rejects(driver.migrate(vm1, null), /draining.*the migration under way was undone/);
    await setState('b', 'active');
    const afterUndo = await driver.inspect(vm1);
    assert.deepEqual([afterUndo?.hostId, afterUndo?.power], ['a', 'running']);
    assert.equal(virshOut(uriA, 'domid', dom).trim(), domId, 'the same run of the domain');
    assert.equal(await used('b'), 0, "B's reservation was given back");
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.ok(!domains(uriB).includes(dom), 'nothing of it on B');
    await reserveOnB();
    await driver.abandonMigration(vm1);
    assert.equal(await used('b'), 0, "B's reservation was given back");
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.equal(virshOut(uriA, 'domid', dom).trim(), domId, 'the same run of the domain');

    // (h) An attempt whose lease runs out as its migration begins (fence.ts): its `virsh migrate`
    // is ended, and it undoes nothing (the job's next run may be moving the VM by then): the mark
    // and B's reservation stay for that run, here a give-up's abandonMigration, which settles them.
    const lease = new AbortController();
    const fence = { signal: lease.signal, check: () => lease.signal.throwIfAborted() };
    const wrapper = installVirshWrapper();
    try {
      wrapper.hold(['migrate', dom]);
      const late = fenced(fence, () => driver.migrate(vm1, 'b')).catch((e: unknown) => e);
      await waitUntil('the migration to begin', () => wrapper.holding(), { budgetMs: slowWaitMs(600_000) });
      lease.abort(new FenceDown());
      assert.ok((await late) instanceof FenceDown, String(await late));
    } finally {
      wrapper.remove();
    }
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: 'b' }, 'the move left to the next run');
    assert.ok((await used('b')) > 0, "B's reservation kept for it");
    await driver.abandonMigration(vm1);
    assert.equal(await used('b'), 0, "B's reservation was given back");
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.equal(virshOut(uriA, 'domid', dom).trim(), domId, 'the same run of the domain');
    assert.ok(!domains(uriB).includes(dom), 'nothing of it on B');

    // (e) B stopped while libvirt's migration job runs (seen on A's domjobinfo): the same.
    const moving = driver.migrate(vm1, 'b');
    const outcome = moving.then(
      () => 'migrated',
      (err: unknown) => err,
    );
    await waitUntil(
      'the migration job running on A',
      async () => {
        if ((await Promise.race([outcome, Promise.resolve('pending')])) !== 'pending') return 'ended';
        const { stdout } = await execFileAsync('virsh', ['-c', uriA, 'domjobinfo', dom]).catch(() => ({
          stdout: '',
        }));
        return /^Job type:\s+Unbounded/m.test(stdout) ? 'running' : undefined;
      },
      { everyMs: 100, budgetMs: slowWaitMs(600_000) },
    );
    stopHost(names.b);
    const failed = await outcome;
    assert.ok(failed instanceof Error, `the migration failed (${String(failed)})`);
    const afterKill = await driver.inspect(vm1);
    assert.deepEqual([afterKill?.hostId, afterKill?.power], ['a', 'running']);
    assert.equal(virshOut(uriA, 'domid', dom).trim(), domId, 'the same run of the domain: never restarted');
    assert.equal(await used('b'), 0, "B's reservation was given back");
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.deepEqual(
      guestReports(vm1, uriA).map((r) => r['boot']),
      ['1', '2', '2', '3'],
      "the guest's console: no boot since",
    );

    // (j) Paused on A with a move to B under way and B silent, as when an attempt died at the
    // switch-over (libvirt pauses the source; the guest may run on B already): nothing is undone
    // (the VM would run on both hosts), by a re-run or a give-up, until B answers. (What (e)
    // left recorded on B goes first: with it there, no move can have reached B since.)
    startHost(names.b);
    await driver.clearLeftovers?.('b');
    stopHost(names.b);
    await reserveOnB();
    virshOut(uriA, 'suspend', dom);
    const outOfSight = (err: unknown) => {
      assert.ok(err instanceof DriverError && err.transient, String(err));
      assert.match(err.message, /is paused on its host and the host it was moving to does not answer/);
      return true;
    };
    await assert.rejects(driver.migrate(vm1, 'b'), outOfSight);
    await assert.rejects(driver.abandonMigration(vm1), outOfSight);
    assert.match(virshOut(uriA, 'domstate', dom), /paused/, 'left paused');
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: 'b' }, 'the move kept');
    assert.ok((await used('b')) > 0, "B's reservation kept");
    // B answers: nothing of the VM there, so the move is undone and the VM runs on A again.
    startHost(names.b);
    await driver.abandonMigration(vm1);
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.equal(await used('b'), 0, "B's reservation was given back");
    assert.match(virshOut(uriA, 'domstate', dom), /running/);
    assert.equal(virshOut(uriA, 'domid', dom).trim(), domId, 'resumed: the same run of the domain');
    // A first attempt that finds it paused (by anything else) with B silent: nothing of it can
    // have reached B, so it is undone as before (resumed on A, B's room given back; what it
    // holds on B recorded, and cleared once B answers).
    stopHost(names.b);
    virshOut(uriA, 'suspend', dom);
    await assert.rejects(driver.migrate(vm1, 'b'), /The destination host does not answer/);
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.equal(await used('b'), 0);
    assert.match(virshOut(uriA, 'domstate', dom), /running/, 'resumed');
    startHost(names.b);
    await driver.clearLeftovers?.('b');

    // (k) Gone from A with a move to B under way and B silent, as when a move switched over and
    // its attempt died before recording it: the re-run fails for now (not for good: the VM may
    // run on B), and settles once B answers. (Here the domain is undefined on A by hand, and
    // defined again before B answers.)
    await driver.stop(vm1, { timeoutMs: 3000 });
    const inactiveXml = join(dataDir, 'vm1-inactive.xml');
    writeFileSync(inactiveXml, virshOut(uriA, 'dumpxml', '--inactive', dom));
    virshOut(uriA, 'undefine', '--checkpoints-metadata', dom);
    await reserveOnB();
    stopHost(names.b);
    await assert.rejects(driver.migrate(vm1, 'b'), (err: unknown) => {
      assert.ok(err instanceof DriverError && err.transient, String(err));
      assert.match(err.message, /is not on its host, and the host it was moving to does not answer/);
      return true;
    });
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: 'b' }, 'the move kept');
    virshOut(uriA, 'define', inactiveXml);
    startHost(names.b);
    await driver.abandonMigration(vm1);
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.equal(await used('b'), 0, "B's reservation was given back");

    // (l) A live move whose `virsh migrate` fails after the switch-over (its connection dropped
    // at the end): the VM runs on B, and the move is recorded, not undone (undoing it would
    // destroy the running copy on B, and its disk with it). Then back to A, stopped.
    await driver.start(vm1);
    const endsBadly = installVirshWrapper();
    try {
      endsBadly.failAfter(['migrate', dom]);
      const moved = await driver.migrate(vm1, 'b');
      assert.deepEqual([moved.hostId, moved.power], ['b', 'running']);
    } finally {
      endsBadly.remove();
    }
    assert.deepEqual(await vmRow(vm1), { host_id: 'b', migrating_to: null });
    assert.match(virshOut(uriB, 'domstate', dom), /running/, 'running on B');
    assert.ok(!domains(uriA).includes(dom), 'gone from A');
    assert.ok(poolVolumes(uriB).includes(`${vm1}.qcow2`), 'its disk on B');
    await driver.migrate(vm1, 'a');

    // (m) B's QEMU stops taking the move's data (SIGSTOP once the guest's memory is moving, as a
    // destination that hangs): the move is ended once A's migration job has sent nothing for
    // the stall window (a driver whose VRP_COPY_STALL is 4 s), and undone: the VM runs on A, the
    // same run, nothing of it on B. (A's speed for the move is 16 MiB/s, so that the guest's
    // memory takes long enough to be caught moving; libvirt counts the disk's copy in steps of
    // 16 MiB, one a second at that speed, well inside the window.)
    const speed = virshOut(uriA, 'migrate-getspeed', dom).trim();
    virshOut(uriA, 'migrate-setspeed', dom, '16');
    const frozen: number[] = [];
    const stallCommands: string[] = [];
    const thaw = () => {
      for (const pid of frozen.splice(0))
        try {
          process.kill(pid, 'SIGCONT');
        } catch {}
    };
    const stalling = await createDriver(loadConfig({ ...env, VRP_COPY_STALL: '4s' }), store.db, {
      info() {},
      // B's QEMU goes on once the migrate command has been ended (else B's libvirtd takes
      // 10 s or more to kill a stopped process).
      debug(obj) {
        const c = obj as { command: string; ok: boolean };
        stallCommands.push(c.command);
        if (c.command === 'virsh migrate' && !c.ok) thaw();
      },
      warn() {},
      error() {},
    });
    const domIdOnA = virshOut(uriA, 'domid', dom).trim();
    /** The QEMUs of the VM on this machine, whichever host runs them. */
    const qemusOf = () => processesWhere((argv) => argv.some((a) => a.startsWith(`guest=${dom},`)));
    const qemuOnA = qemusOf();
    try {
      const moving = stalling.migrate(vm1, 'b').then(
        () => 'migrated',
        (err: unknown) => err,
      );
      const sent = await memoryMoving(moving);
      // B's (A's own QEMU, which came back by a move in (l), has `-incoming` too).
      const incoming = qemusOf().filter((pid) => !qemuOnA.includes(pid));
      assert.equal(incoming.length, 1, "B's incoming QEMU");
      for (const pid of incoming) {
        process.kill(pid, 'SIGSTOP');
        frozen.push(pid);
      }
      t.diagnostic(`(m) B's QEMU stopped after ${sent} bytes of memory were sent`);
      const err = await moving;
      assert.ok(err instanceof DriverError && err.transient, String(err));
      assert.match(err.message, /Could not migrate the VM \(the copy moved no data for 4 s\)/);
      // A's migration job aborted after the command was ended (libvirt would go on with it).
      const ended = stallCommands.indexOf('virsh migrate');
      assert.ok(stallCommands.indexOf('virsh domjobabort', ended) > ended, stallCommands.join(', '));
    } finally {
      thaw();
      await stalling.close();
      virshOut(uriA, 'migrate-setspeed', dom, speed);
    }
    const afterStall = await driver.inspect(vm1);
    assert.deepEqual([afterStall?.hostId, afterStall?.power], ['a', 'running']);
    assert.equal(virshOut(uriA, 'domid', dom).trim(), domIdOnA, 'the same run of the domain');
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.equal(await used('b'), 0, "B's reservation was given back");
    assert.ok(!domains(uriB).includes(dom), 'nothing of it on B');
    await driver.stop(vm1, { timeoutMs: 3000 });

    // (n) A domain of the VM stopped on B without its disk (defined there by hand, as one whose
    // disk was deleted since), with the VM stopped on A: not taken for a finished cold copy
    // (which would delete A's disk, the only one, and record the VM on B without one); it is
    // removed, and the VM moves cold with its disk. Then back to A.
    const staleXml = join(dataDir, 'vm1-stale.xml');
    writeFileSync(staleXml, virshOut(uriA, 'dumpxml', '--inactive', dom));
    virshOut(uriB, 'define', staleXml);
    assert.match(virshOut(uriB, 'domstate', dom), /shut off/);
    assert.ok(!poolVolumes(uriB).includes(`${vm1}.qcow2`), 'no disk of it on B');
    const capacity = (uri: string) =>
      /^Capacity:\s+(\d+)/m.exec(virshOut(uri, 'vol-info', '--bytes', '--pool', 'vrp', `${vm1}.qcow2`))?.[1];
    const diskOnA = capacity(uriA);
    const movedCold = await driver.migrate(vm1, 'b');
    assert.deepEqual([movedCold.hostId, movedCold.power], ['b', 'stopped']);
    assert.equal(capacity(uriB), diskOnA, 'its disk moved with it');
    assert.ok(!domains(uriA).includes(dom), 'gone from A');
    await driver.migrate(vm1, 'a');
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });

    // (o) A cold move whose destination's template copy (its kernel) is removed while the disk
    // is copied, as the sweep removes a copy whose template's image was replaced: the move fails
    // for now before the domain is defined there, and is undone; the next move copies the
    // template again and goes through. Then back to A.
    const holdUpload = installVirshWrapper();
    try {
      holdUpload.hold(['vol-upload', `${vm1}.qcow2`]);
      const cold = driver.migrate(vm1, 'b').then(
        () => 'moved',
        (err: unknown) => err,
      );
      await waitUntil("the disk's upload to B", () => holdUpload.holding(), {
        budgetMs: slowWaitMs(600_000),
      });
      const kernels = poolVolumes(uriB).filter(
        (n) => n.startsWith('template-tiny-') && n.endsWith('.vmlinuz'),
      );
      assert.ok(kernels.length > 0, "the template's kernel on B");
      for (const k of kernels) virshOut(uriB, 'vol-delete', '--pool', 'vrp', k);
      holdUpload.allow();
      const failed = await cold;
      assert.ok(failed instanceof DriverError && failed.transient, String(failed));
      assert.match(failed.message, /The template's copy on host b was removed while the disk was copied/);
    } finally {
      holdUpload.remove();
    }
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.ok(!domains(uriB).includes(dom), 'not defined on B');
    const again = await driver.migrate(vm1, 'b');
    assert.deepEqual([again.hostId, again.power], ['b', 'stopped']);
    assert.ok(
      poolVolumes(uriB).some((n) => n.startsWith('template-tiny-') && n.endsWith('.vmlinuz')),
      "the template's kernel copied to B again",
    );
    await driver.migrate(vm1, 'a');

    // (p) B's pool undefined by hand (its directory and volumes stay), with a stale domain of the
    // VM stopped there: the look for a finished cold copy finds no pool where this process had
    // prepared one; it prepares the pool again (as on a host never prepared), finds no disk of
    // the VM there, and the stale domain is removed and the VM moved cold. Then back to A.
    virshOut(uriB, 'pool-destroy', 'vrp');
    virshOut(uriB, 'pool-undefine', 'vrp');
    virshOut(uriB, 'define', staleXml);
    const afterPool = await driver.migrate(vm1, 'b');
    assert.deepEqual([afterPool.hostId, afterPool.power], ['b', 'stopped']);
    assert.match(virshOut(uriB, 'pool-info', 'vrp'), /^State:\s+running/m, "B's pool prepared again");
    assert.equal(capacity(uriB), diskOnA, 'its disk moved with it');
    assert.ok(!domains(uriA).includes(dom), 'gone from A');
    await driver.migrate(vm1, 'a');
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });

    // (q) A live move that switched over, whose source was never told, and whose guest then
    // stopped on B; made as it happens: B's libvirtd is stopped (SIGSTOP) while the guest's memory
    // moves, so that once A has paused the guest for the switch-over the move's client (`virsh
    // migrate`) waits on B for the Finish step; the client is stopped, B goes on and finishes
    // (the guest runs there, its domain defined there), B's domain is destroyed, and the client
    // is killed before the Confirm step (libvirt leaves A's domain paused, `paused (migrating)`).
    // The driver's look after the failed command takes it for moved: nothing is moved again
    // (that would replace B's disk, which the guest wrote on last, with A's older one), A's copy
    // goes, and the VM is started on B, as it ran.
    await driver.start(vm1);
    // Slow enough that the guest's memory is caught moving (as in (m)); back to its speed once
    // B is held, so that the rest of the move is quick (the client drops a host that has not
    // answered its keepalives for 30 s).
    const speedOnA = virshOut(uriA, 'migrate-getspeed', dom).trim();
    virshOut(uriA, 'migrate-setspeed', dom, '16');
    const ramOnA = await used('a');
    const daemonB = Number(readFileSync(join('/tmp/vrp-test-hosts', names.b, 'libvirtd.pid'), 'utf8'));
    const clients = () =>
      processesWhere(
        (argv) => (argv[0] ?? '').endsWith('virsh') && argv.includes('migrate') && argv.includes(dom),
      );
    const stopped: number[] = [];
    const resume = (pid: number) => {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {}
    };
    const migrateCommands = () => commands.filter((c) => c === 'virsh migrate').length;
    const migrateCommandsBefore = migrateCommands();
    try {
      const moving = driver.migrate(vm1, 'b').then(
        (v) => v,
        (err: unknown) => err,
      );
      await memoryMoving(moving);
      process.kill(daemonB, 'SIGSTOP');
      stopped.push(daemonB);
      virshOut(uriA, 'migrate-setspeed', dom, speedOnA);
      await waitUntil(
        'A to pause the guest for the switch-over',
        () => /paused \(migrating\)/.test(virshOut(uriA, 'domstate', '--reason', dom)) || undefined,
        { everyMs: 100, budgetMs: slowWaitMs(60_000) },
      );
      // The client asks B for the Finish step as soon as A's step returns.
      await new Promise((r) => setTimeout(r, 3000));
      const [client, ...more] = clients();
      assert.ok(client !== undefined && more.length === 0, 'one virsh migrate');
      process.kill(client, 'SIGSTOP');
      stopped.push(client);
      resume(daemonB);
      await waitUntil(
        'B to finish the move',
        () => /running/.test(virshOut(uriB, 'domstate', dom)) || undefined,
        {
          everyMs: 200,
          budgetMs: slowWaitMs(60_000),
        },
      );
      assert.match(virshOut(uriB, 'dominfo', dom), /^Persistent:\s+yes/m, 'defined on B');
      virshOut(uriB, 'destroy', dom);
      process.kill(client, 'SIGKILL');
      const settled = await moving;
      assert.ok(!(settled instanceof Error), String(settled));
      assert.deepEqual(
        [(settled as { hostId: string }).hostId, (settled as { power: string }).power],
        ['b', 'running'],
      );
    } finally {
      for (const pid of stopped.splice(0)) resume(pid);
    }
    assert.equal(migrateCommands(), migrateCommandsBefore + 1, 'not moved again');
    assert.deepEqual(await vmRow(vm1), { host_id: 'b', migrating_to: null });
    assert.match(virshOut(uriB, 'domstate', dom), /running/, 'started on B');
    assert.ok(!domains(uriA).includes(dom), "A's paused copy gone");
    assert.equal(await used('a'), ramOnA - 1, "A's room given back");
    assert.deepEqual(
      poolVolumes(uriA).filter((n) => n.startsWith(vm1)),
      [],
      "nothing of it in A's pool",
    );

    // (r) A guest that suspended itself (`pmsuspended`: its definition an older one, without the
    // suspend off, made so on B here) moves live: woken first, it arrives running on A, its
    // memory with it (not booted again: its disk counts the same boots, its agent answers).
    virshOut(uriB, 'destroy', dom);
    const olderXml = join(dataDir, 'older.xml');
    writeFileSync(
      olderXml,
      virshOut(uriB, 'dumpxml', '--inactive', dom).replace(/<pm>[\s\S]*?<\/pm>\s*/, ''),
    );
    virshOut(uriB, 'define', olderXml);
    const reportsOnB = guestReports(vm1, uriB).length;
    virshOut(uriB, 'start', dom);
    // (The boot (q) started may have been cut short before its report: the boot counted on the
    // guest's disk is its new report's.)
    const sleepyBoot = (await nextReport(uriB, reportsOnB))['boot'] ?? '';
    assert.equal((await guestExecWhenUp(dom, 'cat /sys/power/mem_sleep', uriB)).out.trim(), 's2idle [deep]');
    await guestSpawn(dom, 'sleep 1; echo mem > /sys/power/state', uriB);
    await waitUntil(
      'the guest asleep on B',
      () => virshOut(uriB, 'domstate', dom).trim() === 'pmsuspended' || undefined,
      {
        everyMs: 250,
        budgetMs: slowWaitMs(60_000),
      },
    );
    const woken = await driver.migrate(vm1, 'a');
    assert.deepEqual([woken.hostId, woken.power], ['a', 'running']);
    assert.equal(virshOut(uriA, 'domstate', dom).trim(), 'running', 'awake on A');
    assert.equal(
      (await guestExecWhenUp(dom, 'cat /data/boots', uriA)).out.trim(),
      sleepyBoot,
      'not booted again',
    );
    assert.ok(!domains(uriB).includes(dom), "B's copy gone");

    // (s) A's power is cut and comes back (every process of it killed, its libvirtd started again
    // over its files, as at a host's boot): the VM, which ran (moved there live, marked to start
    // with A), boots again there; stopped through the driver, it stays off through the next cut
    // (libvirtd runs its autostart before it takes connections, virStateInitialize: found shut
    // off once A answers, it was not started).
    assert.match(virshOut(uriA, 'dominfo', dom), /^Autostart:\s+enable/m, 'marked to start with A');
    const reportsBeforeCut = guestReports(vm1, uriA).length;
    powerCycle(names.a);
    assert.equal(
      (await nextReport(uriA, reportsBeforeCut))['boot'],
      String(Number(sleepyBoot) + 1),
      'booted again',
    );
    assert.equal((await driver.inspect(vm1))?.power, 'running', 'running again after the cut');
    await driver.stop(vm1, { timeoutMs: 3000 });
    assert.match(virshOut(uriA, 'dominfo', dom), /^Autostart:\s+disable/m, 'no longer marked');
    powerCycle(names.a);
    assert.equal(virshOut(uriA, 'domstate', dom).trim(), 'shut off', 'it stayed off');
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });

    // (i) A stopped VM whose disk volume is gone from its host (deleted by hand): its move is
    // refused for good before anything is copied, and it stays on A.
    virshOut(uriA, 'vol-delete', '--pool', 'vrp', `${vm1}.qcow2`);
    await assert.rejects(driver.migrate(vm1, 'b'), (err: unknown) => {
      assert.ok(err instanceof DriverError && !err.transient, String(err));
      assert.equal(
        err.message,
        `VM ${vm1} has no disk on its host; the migration under way was undone, the server stays on its host`,
      );
      return true;
    });
    assert.deepEqual(await vmRow(vm1), { host_id: 'a', migrating_to: null });
    assert.equal(await used('b'), 0, "B's reservation was given back");
    assert.ok(!domains(uriB).includes(dom), 'nothing of it on B');
    assert.deepEqual(
      poolVolumes(uriB).filter((n) => n.startsWith(vm1)),
      [],
      "nothing of it in B's pool",
    );

    for (const m of migrations) t.diagnostic(`libvirt migration ${JSON.stringify(m)}`);
    await driver.destroy(vm1);
    assert.deepEqual(
      poolVolumes(uriA).filter((n) => !n.startsWith('template-')),
      [],
      "nothing of the VM is left in A's pool",
    );
  } finally {
    await removeTemplateVolumes(store.db).catch(() => {});
    await driver.close();
    await store.close();
  }
});
