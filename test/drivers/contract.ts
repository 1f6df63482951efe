/**
 * What every hypervisor driver must do, as node:test tests. The simulated driver runs it
 * always; the libvirt driver runs it with real VMs where libvirt is installed (.ci/run sets it up).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { DriverError, type HypervisorDriver, type VmSpec } from '../../src/drivers/driver.ts';
import { slowWaitMs } from '../helpers/budget.ts';

export interface ContractTarget {
  readonly driver: HypervisorDriver;
  readonly templateId: string;
  /** Waits for the guest's `n`th report on its console (one per boot) and returns it, where the driver has a guest. */
  readonly guest?: (vmId: string, n: number) => Promise<Record<string, string>>;
  cleanup(): Promise<void>;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export function driverContract(
  name: string,
  make: () => Promise<ContractTarget>,
  options: { stopTimeoutMs?: number; skip?: string | false } = {},
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
      const vmId = '0c0c0c0c-0000-4000-8000-000000000001';
      // Each boot of a real guest prints one report; wait for it before the next operation.
      let reports = 0;
      const booted = async () => t.guest?.(vmId, ++reports);
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

        // Backup, change the disk (a boot writes to it), restore: the change is gone.
        const before = (await d.inspect(vmId))!;
        const backup = await d.createBackup(vmId, '0c0c0c0c-0000-4000-8000-0000000000b1');
        assert.ok(backup.sizeGb > 0);
        assert.deepEqual(await d.createBackup(vmId, backup.backupId), backup, 'backup is idempotent');
        await d.reboot(vmId);
        const changed = await booted();
        await d.restoreBackup(vmId, backup.backupId);
        assert.equal((await d.inspect(vmId))!.power, 'running', 'restore keeps the power state');
        if (changed) {
          const restored = (await booted())!;
          assert.equal(
            restored['boot'],
            changed['boot'],
            'the boot made after the backup is gone from the disk',
          );
        } else if (before.diskRevision !== undefined) {
          assert.equal((await d.inspect(vmId))!.diskRevision, before.diskRevision);
        }
        await d.deleteBackup(vmId, backup.backupId);
        await d.deleteBackup(vmId, backup.backupId);
        await assert.rejects(
          d.restoreBackup(vmId, backup.backupId),
          (e: unknown) => e instanceof DriverError && !e.transient,
        );

        await d.destroy(vmId);
        assert.equal(await d.inspect(vmId), undefined);
        await d.destroy(vmId);
        await assert.rejects(d.start(vmId), (e: unknown) => e instanceof DriverError && !e.transient);
      } finally {
        await d.destroy(vmId).catch(() => {});
        await t.cleanup();
      }
    });
  });
}
