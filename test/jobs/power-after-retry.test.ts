/**
 * Jobs whose driver work powers the server off and back on (an upgrade's resize, a restore): an
 * attempt that powered it off and then failed for now leaves it off, and the re-run finds it so.
 * A server that was running when the job began runs at its end all the same.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { JobAction } from '../../src/domain/status-machine.ts';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { call } from '../helpers/app.ts';
import { interceptDriver } from '../helpers/driver-calls.ts';
import { type ServiceFixture, until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

/** The call's first attempt powers the VM off, then fails as a host that stopped answering does. */
function offThenFailing(driver: HypervisorDriver, call: 'resize' | 'importDisk'): HypervisorDriver {
  let attempts = 0;
  const firstFails = async (vmId: string) => {
    attempts++;
    if (attempts > 1) return;
    await driver.powerOff(vmId);
    throw new DriverError('Could not change the VM (the host did not answer)', { transient: true });
  };
  return interceptDriver(
    driver,
    call === 'resize'
      ? {
          resize: async (vmId, spec) => {
            await firstFails(vmId);
            return driver.resize(vmId, spec);
          },
        }
      : {
          importDisk: async (vmId, bytes, runs) => {
            await firstFails(vmId);
            return driver.importDisk(vmId, bytes, runs);
          },
        },
  );
}

/** Runs the job the request queued with `driver` (a worker of its own) and waits for its end; the job's row. */
async function runToEnd(s: ServiceFixture, driver: HypervisorDriver, action: JobAction) {
  const worker = s.worker({}, { driver });
  await until(
    async () => ['succeeded', 'failed'].includes((await s.jobRow(action)).status),
    `the ${action} to end`,
  );
  // Only the next job's own worker runs it.
  await worker.stop(1000);
  return s.jobRow(action);
}

for (const store of testStores()) {
  describe(`the power state after a retried attempt (${store})`, () => {
    test('an upgrade whose first attempt powered the server off and failed: it runs at the end', () =>
      withRunningService(store, async (s) => {
        const driver = s.t.driver;
        assert.ok(driver);
        const res = await call(s.t, s.token, 'POST', `service/${s.id}/upgrade`, {
          CPU: 2,
          RAM: 2,
          HDD: 20,
          IP: 1,
          BACKUP: 10,
        });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        const job = await runToEnd(s, offThenFailing(driver, 'resize'), 'upgrade');
        assert.equal(job.status, 'succeeded', job.error ?? '');
        assert.equal(job.attempts, 2);
        assert.equal((await driver.inspect(s.id))?.power, 'running', 'the VM runs, as the service says');
        const status = await call(s.t, s.token, 'GET', `service/${s.id}/status`);
        assert.equal(status.body.data.status, 'running');
      }));

    test('a restore whose first attempt powered the server off and failed: it runs at the end', () =>
      withRunningService(store, async (s) => {
        const driver = s.t.driver;
        assert.ok(driver);
        // A backup to restore, taken by the app's own worker.
        const backup = await call(s.t, s.token, 'POST', `service/${s.id}/backup/create`);
        assert.equal(backup.status, 200, JSON.stringify(backup.body));
        const taken = await runToEnd(s, driver, 'backup_create');
        assert.equal(taken.status, 'succeeded', taken.error ?? '');
        const backupId = JSON.parse(taken.params).backup_id as string;
        const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/restore/${backupId}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        const job = await runToEnd(s, offThenFailing(driver, 'importDisk'), 'backup_restore');
        assert.equal(job.status, 'succeeded', job.error ?? '');
        assert.equal(job.attempts, 2);
        assert.equal((await driver.inspect(s.id))?.power, 'running', 'the VM runs, as the service says');
      }));
  });
}
