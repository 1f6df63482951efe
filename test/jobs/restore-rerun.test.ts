/**
 * A restore whose attempt put the backup's disk back and then did not end (the host stopped
 * answering before the job could see the VM, the worker died) is run again: the re-run must not
 * restore again, which would throw away what the server wrote on its restored disk since. The
 * driver records the job's step marker once the disk is the backup's; the re-run sees it and
 * only powers the server as it was.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { call } from '../helpers/app.ts';
import { interceptDriver } from '../helpers/driver-calls.ts';
import { never, type ServiceFixture, until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

/** The simulated VM's disk content (a new generation for every write the server makes). */
const generation = async (s: ServiceFixture) =>
  (
    await s.t.ctx.store.db
      .selectFrom('sim_vms')
      .select('content_generation')
      .where('id', '=', s.id)
      .executeTakeFirstOrThrow()
  ).content_generation;

/** The server writes on its disk (the simulated disk's next generation); the new generation. */
async function serverWrites(s: ServiceFixture): Promise<number> {
  const next = (await generation(s)) + 1;
  await s.t.ctx.store.db
    .updateTable('sim_vms')
    .set({ content_generation: next })
    .where('id', '=', s.id)
    .execute();
  return next;
}

/** A backup taken by a worker of the test's, then the server's writes after it; the backup's id and the generation it holds. */
async function backupThenWrites(s: ServiceFixture): Promise<{ backupId: string; backedUp: number }> {
  const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/create`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const w = s.worker();
  await until(async () => (await s.jobRow('backup_create')).status === 'succeeded', 'the backup');
  await w.stop(1000);
  const backedUp = await generation(s);
  await serverWrites(s);
  const backupId = JSON.parse((await s.jobRow('backup_create')).params).backup_id as string;
  return { backupId, backedUp };
}

for (const store of testStores()) {
  describe(`a restore run again after its disk was restored (simulated hypervisor, ${store})`, () => {
    test('its host stops answering before the job sees the VM: the re-run does not restore again, and what the server wrote since stays', () =>
      withRunningService(store, async (s) => {
        const driver = s.t.driver;
        assert.ok(driver);
        const { backupId, backedUp } = await backupThenWrites(s);
        let imports = 0;
        let inspects = 0;
        let written = 0;
        const flaky: HypervisorDriver = interceptDriver(driver, {
          importDisk: async (...args) => {
            imports++;
            return driver.importDisk(...args);
          },
          // The first look after the import: the server has written on its restored disk, and
          // its host stops answering.
          inspect: async (vmId) => {
            if (imports === 1 && inspects++ === 0) {
              assert.equal(await generation(s), backedUp, 'the disk is the backup');
              written = await serverWrites(s);
              throw new DriverError('Could not read the VM state (the host did not answer)', {
                transient: true,
              });
            }
            return driver.inspect(vmId);
          },
        });
        const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/restore/${backupId}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        s.worker({}, { driver: flaky });
        await until(
          async () => ['succeeded', 'failed'].includes((await s.jobRow('backup_restore')).status),
          'the restore to end',
        );
        const job = await s.jobRow('backup_restore');
        assert.equal(job.status, 'succeeded', job.error ?? '');
        assert.equal(job.attempts, 2, 'run again');
        assert.equal(imports, 1, 'the disk restored once');
        assert.equal(await generation(s), written, 'what the server wrote on its restored disk stays');
        assert.equal((await driver.inspect(s.id))?.power, 'running');
        const status = await call(s.t, s.token, 'GET', `service/${s.id}/status`);
        assert.equal(status.body.data.status, 'running');
        const [backup] = (await call(s.t, s.token, 'GET', `service/${s.id}/backups`)).body.data;
        assert.equal(backup.status, 'available');
      }));

    test('its worker dies after the disk was restored: the next worker does not restore again', () =>
      withRunningService(store, async (s) => {
        const { backupId, backedUp } = await backupThenWrites(s);
        let written = 0;
        const dies: Task<'backup_restore'> = async (tc) => {
          await TASKS.backup_restore(tc);
          assert.equal(await generation(s), backedUp, 'the disk is the backup');
          written = await serverWrites(s);
          return never;
        };
        const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/restore/${backupId}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        const dying = s.dyingWorker({ backup_restore: dies });
        await until(() => written > 0, 'the first attempt to restore the disk');
        await dying.die();
        s.worker();
        await until(
          async () => ['succeeded', 'failed'].includes((await s.jobRow('backup_restore')).status),
          'the re-run to end',
        );
        const job = await s.jobRow('backup_restore');
        assert.equal(job.status, 'succeeded', job.error ?? '');
        assert.equal(job.attempts, 2);
        assert.equal(await generation(s), written, 'what the server wrote on its restored disk stays');
      }));

    test('its server cannot be started after the disk was restored: the job fails, and says the disk is the backup', () =>
      withRunningService(store, async (s) => {
        const driver = s.t.driver;
        assert.ok(driver);
        const { backupId, backedUp } = await backupThenWrites(s);
        const cannotStart: HypervisorDriver = interceptDriver(driver, {
          importDisk: async (...args) => {
            await driver.importDisk(...args);
            throw new DriverError('Could not start the VM', { transient: false });
          },
        });
        const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/restore/${backupId}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        s.worker({}, { driver: cannotStart });
        await until(
          async () => (await s.jobRow('backup_restore')).status === 'failed',
          'the restore to fail',
        );
        const [, , restored] = await s.jobs();
        assert.equal(restored.action, 'backup_restore');
        assert.equal(
          restored.error,
          "Could not start the VM (the server's disk had been restored from the backup; the server may be stopped)",
        );
        assert.equal(await generation(s), backedUp, 'the disk is the backup');
        const [backup] = (await call(s.t, s.token, 'GET', `service/${s.id}/backups`)).body.data;
        assert.equal(backup.status, 'available');
      }));

    test('its workers keep dying, the first after the disk was restored: the job is given up, and says the disk is the backup', () =>
      withRunningService(store, async (s) => {
        const { backupId, backedUp } = await backupThenWrites(s);
        let claims = 0;
        let diskBack = false;
        const dies: Task<'backup_restore'> = async (tc) => {
          if (++claims === 1) {
            await TASKS.backup_restore(tc);
            diskBack = true;
          }
          return never;
        };
        const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/restore/${backupId}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        for (let attempt = 1; attempt <= 3; attempt++) {
          const dying = s.dyingWorker({ backup_restore: dies });
          await until(() => claims === attempt && (attempt > 1 || diskBack), `attempt ${attempt}`);
          if (attempt === 1) assert.equal(await generation(s), backedUp, 'the disk is the backup');
          await dying.die();
        }
        s.worker();
        await until(async () => (await s.jobRow('backup_restore')).status === 'failed', 'the give-up');
        const [, , restored] = await s.jobs();
        assert.equal(
          restored.error,
          "Gave up after 3 attempts: the worker running it stopped (the server's disk had been restored from the backup; the server may be stopped)",
        );
        assert.equal(claims, 3, 'not run a fourth time');
      }));
  });
}
