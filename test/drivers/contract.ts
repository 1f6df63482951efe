/**
 * What every hypervisor driver must do, as node:test tests. The simulated driver runs it
 * always; the libvirt driver runs it with real VMs where libvirt is installed (.ci/run sets it up).
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  type DiskExport,
  DriverError,
  type HypervisorDriver,
  type VmSpec,
} from '../../src/drivers/driver.ts';
import { slowWaitMs } from '../helpers/budget.ts';
import { type DiskImage, diskImage } from '../helpers/disk-image.ts';
import { sshKeyPair } from '../helpers/ssh-key-pair.ts';

export interface ContractTarget {
  readonly driver: HypervisorDriver;
  readonly templateId: string;
  /** Waits for the guest's `n`th report on its console (one per boot) and returns it, where the driver has a guest. */
  readonly guest?: (vmId: string, n: number) => Promise<Record<string, string>>;
  cleanup(): Promise<void>;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** The export's runs written into `image`, then committed (or not) and closed, as a backup job does. */
async function exported(e: DiskExport, image: DiskImage, commit: boolean) {
  try {
    const carried = await image.apply(e);
    if (commit) await e.commit();
    return carried;
  } finally {
    await e.close();
  }
}

export function driverContract(
  name: string,
  make: () => Promise<ContractTarget>,
  options: {
    stopTimeoutMs?: number;
    skip?: string | false;
    /**
     * false: leave out reinstall and rescue, for a driver whose own test file runs the same
     * checks on one VM (libvirt: test/drivers/libvirt-selfservice.test.ts), where each case here
     * would create a VM of its own (about 10 minutes more of real VMs on CI).
     */
    selfService?: boolean;
  } = {},
) {
  const stopTimeoutMs = options.stopTimeoutMs ?? 1000;
  const spec = (t: ContractTarget, vmId: string): VmSpec => ({
    vmId,
    hostname: 'contract.example.com',
    username: 'root',
    password: 'Contract-pass-1',
    templateId: t.templateId,
    cpu: 1,
    ramGb: 1,
    diskGb: 2,
    ipCount: 2,
  });

  describe(`driver contract: ${name}`, () => {
    test('a VM through its whole life', {
      timeout: slowWaitMs(900_000),
      skip: options.skip ?? false,
    }, async () => {
      const t = await make();
      const d = t.driver;
      const vmId = randomUUID();
      // Each boot of a real guest prints one report; wait for it before the next operation.
      let reports = 0;
      const booted = async () => t.guest?.(vmId, ++reports);
      const work = mkdtempSync(join(tmpdir(), 'vrp-contract-'));
      try {
        const created = await d.create(spec(t, vmId));
        assert.equal(created.power, 'running');
        assert.deepEqual([created.cpu, created.ramGb, created.diskGb], [1, 1, 2]);
        assert.equal(created.ips.length, 2);
        assert.deepEqual(await d.create(spec(t, vmId)), await d.inspect(vmId), 'create is idempotent');
        const boot1 = await booted();
        if (boot1) {
          assert.equal(boot1['hostname'], 'contract.example.com');
          assert.equal(boot1['password_sha256'], sha256('Contract-pass-1'), 'the password reached the guest');
          assert.equal(boot1['ips'], `${created.ips.join(',')},`);
        }

        assert.equal((await d.stop(vmId, { timeoutMs: stopTimeoutMs })).power, 'stopped');
        assert.equal(
          (await d.stop(vmId, { timeoutMs: stopTimeoutMs })).power,
          'stopped',
          'stop is idempotent',
        );
        assert.equal((await d.start(vmId)).power, 'running');
        await booted();
        assert.equal((await d.start(vmId)).power, 'running', 'start is idempotent');
        assert.equal((await d.reboot(vmId)).power, 'running');
        await booted();
        // A restart job re-run after its worker died: the driver recorded the boot identity before
        // rebooting, so the re-run finds the VM booted since and does not reboot it again (a later
        // boot report would otherwise be this extra boot's).
        const recorded: string[] = [];
        const record = async (value: string) => {
          recorded.push(value);
        };
        await d.reboot(vmId, { recorded: null, record });
        await booted();
        assert.equal(recorded.length, 1, 'the boot identity is recorded before the reboot');
        assert.equal((await d.reboot(vmId, { recorded: recorded[0]!, record })).power, 'running');
        assert.equal(recorded.length, 1, 'the re-run does not reboot again');
        assert.equal((await d.powerOff(vmId)).power, 'stopped');

        const resized = await d.resize(vmId, { cpu: 2, ramGb: 2, diskGb: 3, ipCount: 1 });
        assert.deepEqual([resized.cpu, resized.ramGb, resized.diskGb, resized.ips.length], [2, 2, 3, 1]);
        assert.equal(resized.power, 'stopped', 'resize keeps the power state');
        assert.equal(resized.ips[0], created.ips[0], 'the primary address stays');
        await assert.rejects(
          d.resize(vmId, { cpu: 2, ramGb: 2, diskGb: 2, ipCount: 1 }),
          (e: unknown) => e instanceof DriverError && !e.transient,
        );

        assert.equal(
          await d.setPassword(vmId, 'root', 'Changed-pass-2'),
          'next_boot',
          'a stopped guest gets it at boot',
        );
        await d.start(vmId);
        const upgraded = await booted();
        if (upgraded) {
          assert.equal(upgraded['cpus'], '2', 'the guest sees the new vCPUs');
          assert.ok(Number(upgraded['mem_kb']) > 1.5 * 1024 * 1024, 'the guest sees the new memory');
          assert.equal(Number(upgraded['disk_kb']), 3 * 1024 * 1024, 'the guest sees the grown disk');
          assert.equal(
            upgraded['password_sha256'],
            sha256('Changed-pass-2'),
            'the new password reached the guest',
          );
          assert.equal(upgraded['ips'], `${resized.ips[0]},`, 'the guest got the new address list');
        }

        // Backups: a full export, a change to the disk (a boot writes to it), an incremental
        // since the full one; their runs put together are each point's disk.
        const backupId = (n: number) => `0c0c0c0c-0000-4000-8000-0000000000b${n}`;
        const before = (await d.inspect(vmId))!;
        const first = await d.exportDisk(vmId, backupId(1), null);
        assert.deepEqual([first.kind, first.since], ['full', null], 'the first export is full');
        const point1 = diskImage(join(work, 'point1.img'), first.diskBytes);
        const full = await exported(first, point1, true);
        assert.ok(full.bytes > 0, 'a full export carries the disk');
        await d.reboot(vmId);
        const changed = await booted();
        const second = await d.exportDisk(vmId, backupId(2), backupId(1));
        assert.deepEqual(
          [second.kind, second.since],
          ['incremental', backupId(1)],
          'an export since a committed one is incremental',
        );
        const point2 = await point1.copy(join(work, 'point2.img'));
        const incremental = await exported(second, point2, true);
        assert.ok(incremental.bytes < full.bytes, 'an incremental carries less than the full export');
        assert.notEqual(await point2.sha256(), await point1.sha256(), 'the incremental carries the change');

        // An export not committed leaves no checkpoint: the next one since it is full.
        const third = await d.exportDisk(vmId, backupId(3), backupId(2));
        assert.equal(third.kind, 'incremental');
        await third.close();
        const fourth = await d.exportDisk(vmId, backupId(4), backupId(3));
        assert.deepEqual([fourth.kind, fourth.since], ['full', null], 'an uncommitted export is no base');
        await fourth.close();
        // A dropped checkpoint is no base either; dropping a missing one (again, or never taken) is fine.
        await d.dropCheckpoint(vmId, backupId(1));
        await d.dropCheckpoint(vmId, backupId(1));
        await d.dropCheckpoint(vmId, backupId(9));
        const fifth = await d.exportDisk(vmId, backupId(5), backupId(1));
        assert.equal(fifth.kind, 'full', 'a dropped checkpoint is no base');
        await fifth.close();

        // Import of the first point brings it back: the change is gone, the power state stays.
        await d.importDisk(vmId, point1.diskBytes, point1.runs());
        const imported = (await d.inspect(vmId))!;
        assert.equal(imported.power, 'running', 'import keeps the power state');
        if (changed) {
          const restored = (await booted())!;
          assert.equal(
            restored['boot'],
            changed['boot'],
            'the boot made after the first export is gone from the disk',
          );
        } else if (before.diskRevision !== undefined) {
          assert.equal(imported.diskRevision, before.diskRevision, 'the disk is the first point again');
        }
        // An imported disk has no checkpoints: the next export is full (even since a committed one).
        const sixth = await d.exportDisk(vmId, backupId(6), backupId(2));
        assert.deepEqual([sixth.kind, sixth.since], ['full', null], 'the export after an import is full');
        const point6 = diskImage(join(work, 'point6.img'), sixth.diskBytes);
        await exported(sixth, point6, false);
        if (!changed && imported.diskRevision === before.diskRevision) {
          assert.equal(
            await point6.sha256(),
            await point1.sha256(),
            'the imported disk is the first point, whole',
          );
        }

        await d.destroy(vmId);
        assert.equal(await d.inspect(vmId), undefined);
        await d.destroy(vmId);
        await assert.rejects(d.start(vmId), (e: unknown) => e instanceof DriverError && !e.transient);
      } finally {
        await d.destroy(vmId).catch(() => {});
        await t.cleanup();
        rmSync(work, { recursive: true, force: true });
      }
    });

    const selfService = options.selfService ?? true;
    if (selfService)
      test('reinstall: a fresh disk of the template, the addresses, host and power state kept', {
        timeout: slowWaitMs(900_000),
        skip: options.skip ?? false,
      }, async () => {
        const t = await make();
        const d = t.driver;
        const vmId = randomUUID();
        let reports = 0;
        const booted = async () => t.guest?.(vmId, ++reports);
        const key = sshKeyPair('ed25519', { comment: 'contract' }).public.trim();
        const reinstallSpec = (password: string) => ({
          templateId: t.templateId,
          hostname: 'reinstalled.example.com',
          username: 'root',
          password,
          sshKeys: [key],
        });
        const checkpoint = (n: number) => `0c0c0c0c-0000-4000-8000-0000000000c${n}`;
        try {
          const created = await d.create(spec(t, vmId));
          await booted();
          // A committed export (a checkpoint the reinstall must drop), then a write to the disk (a boot).
          const first = await d.exportDisk(vmId, checkpoint(1), null);
          await first.commit();
          await first.close();
          await d.reboot(vmId);
          const changed = await booted();
          if (changed) assert.equal(changed['boot'], '2');
          const written = (await d.inspect(vmId))!;
          if (written.diskRevision !== undefined && created.diskRevision !== undefined) {
            assert.notEqual(written.diskRevision, created.diskRevision, 'the disk moved since the create');
          }

          const running = await d.reinstall(vmId, reinstallSpec('Reinstall-pass-3'));
          assert.equal(running.power, 'running', 'a running server is running again');
          assert.deepEqual(running.ips, created.ips, 'the addresses stay');
          assert.equal(running.hostId, created.hostId, 'the host stays');
          assert.deepEqual([running.cpu, running.ramGb, running.diskGb], [1, 1, 2], 'the amounts stay');
          const fresh = await booted();
          if (fresh) {
            assert.equal(fresh['boot'], '1', 'the disk is a fresh one: its boot counter starts again');
            assert.equal(fresh['hostname'], 'reinstalled.example.com');
            assert.equal(
              fresh['password_sha256'],
              sha256('Reinstall-pass-3'),
              'the new password reached the guest',
            );
            assert.equal(fresh['ips'], `${created.ips.join(',')},`, 'the guest has the same addresses');
          } else if (created.diskRevision !== undefined) {
            assert.equal(running.diskRevision, created.diskRevision, 'the disk is a fresh VM’s again');
          }
          const after = await d.exportDisk(vmId, checkpoint(2), checkpoint(1));
          assert.deepEqual([after.kind, after.since], ['full', null], 'the export after a reinstall is full');
          await after.close();

          // A stopped server is reinstalled stopped; its next boot is the fresh disk's first.
          await d.reboot(vmId);
          await booted();
          assert.equal((await d.powerOff(vmId)).power, 'stopped');
          const stopped = await d.reinstall(vmId, reinstallSpec('Reinstall-pass-4'));
          assert.equal(stopped.power, 'stopped', 'a stopped server stays stopped');
          assert.deepEqual(stopped.ips, created.ips, 'the addresses stay');
          assert.equal((await d.inspect(vmId))!.power, 'stopped');
          if (created.diskRevision !== undefined) {
            assert.equal(stopped.diskRevision, created.diskRevision, 'the disk is a fresh VM’s again');
          }
          assert.equal((await d.start(vmId)).power, 'running');
          const second = await booted();
          if (second) {
            assert.equal(second['boot'], '1', 'the stopped server’s disk was rebuilt');
            assert.equal(second['password_sha256'], sha256('Reinstall-pass-4'));
          }
          await assert.rejects(
            d.reinstall('0c0c0c0c-0000-4000-8000-0000000000ff', reinstallSpec('Reinstall-pass-5')),
            (e: unknown) => e instanceof DriverError && !e.transient,
            'no such VM',
          );
        } finally {
          await d.destroy(vmId).catch(() => {});
          await t.cleanup();
        }
      });

    if (selfService)
      test('rescue and back', { timeout: slowWaitMs(900_000), skip: options.skip ?? false }, async () => {
        const t = await make();
        const d = t.driver;
        const vmId = randomUUID();
        const login = { username: 'root', password: 'Rescue-pass-1' };
        // Each boot of the VM's own system prints one report (the rescue system prints none).
        let reports = 0;
        const booted = async () => t.guest?.(vmId, ++reports);
        const work = mkdtempSync(join(tmpdir(), 'vrp-contract-'));
        // The disk as a full export shows it (and its revision where the driver keeps one).
        let exports = 0;
        const disk = async () => {
          const e = await d.exportDisk(vmId, `0c0c0c0c-0000-4000-8000-0000000000c${++exports}`, null);
          const image = diskImage(join(work, `disk${exports}.img`), e.diskBytes);
          await exported(e, image, false);
          return { sha256: await image.sha256(), revision: (await d.inspect(vmId))?.diskRevision };
        };
        try {
          await d.create(spec(t, vmId));
          await booted();
          assert.equal((await d.powerOff(vmId)).power, 'stopped');
          const before = await disk();

          assert.equal((await d.rescue(vmId, login)).power, 'running', 'the rescue system runs');
          assert.equal((await d.rescue(vmId, login)).power, 'running', 'rescue is idempotent');
          assert.equal((await d.inspect(vmId))?.power, 'running');
          assert.equal((await d.unrescue(vmId, 'stopped')).power, 'stopped', 'unrescue to stopped');
          assert.equal((await d.unrescue(vmId, 'stopped')).power, 'stopped', 'unrescue is idempotent');
          const after = await disk();
          assert.equal(after.sha256, before.sha256, 'a rescue round trip leaves the disk as it was');
          assert.equal(after.revision, before.revision);

          assert.equal((await d.rescue(vmId, login)).power, 'running');
          assert.equal((await d.unrescue(vmId, 'running')).power, 'running', 'unrescue to running');
          await booted();
          assert.equal((await d.unrescue(vmId, 'running')).power, 'running', 'unrescue is idempotent');
          assert.equal((await d.inspect(vmId))?.power, 'running');

          // A VM in rescue is destroyed whole.
          assert.equal((await d.rescue(vmId, login)).power, 'running');
          await d.destroy(vmId);
          assert.equal(await d.inspect(vmId), undefined);
          await assert.rejects(
            d.rescue(vmId, login),
            (e: unknown) => e instanceof DriverError && !e.transient,
          );
        } finally {
          await d.destroy(vmId).catch(() => {});
          await t.cleanup();
          rmSync(work, { recursive: true, force: true });
        }
      });
  });
}
