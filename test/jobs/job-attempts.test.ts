/**
 * No job is retried for ever. A job that keeps failing, that cannot save its
 * own result, or whose worker keeps dying ends `failed` after a bounded number of attempts, and
 * the jobs queued behind it on the same service run.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BackupStoreError } from '../../src/drivers/backup-store/store.ts';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { retryDelayMs } from '../../src/jobs/attempts.ts';
import {
  type BackupDeps,
  backupDeps,
  removeGivenUpObjects,
  settleGivenUp,
} from '../../src/jobs/backup-chain.ts';
import { backupCreateOperation } from '../../src/jobs/backup-operation.ts';
import { claimJobs, recoverExpiredJobs } from '../../src/jobs/claim.ts';
import { requestOperation } from '../../src/jobs/queue.ts';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { findBackupById, setBackupStatus } from '../../src/store/repos/backups.ts';
import { call, waitForStatus } from '../helpers/app.ts';
import { interceptDriver } from '../helpers/driver-calls.ts';
import { never, type ServiceFixture, until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

describe('retry delays', () => {
  test('double with each attempt, vary by at most 20 %, and stop growing at 5 minutes', () => {
    assert.equal(
      retryDelayMs(1000, 1, () => 0.5),
      1000,
    );
    assert.equal(
      retryDelayMs(1000, 3, () => 0.5),
      4000,
    );
    assert.equal(
      retryDelayMs(1000, 3, () => 0),
      3200,
    );
    assert.equal(
      retryDelayMs(1000, 3, () => 1),
      4800,
    );
    assert.equal(
      retryDelayMs(1000, 40, () => 0.5),
      300_000,
    );
  });
});

for (const store of testStores()) {
  describe(`jobs end (${store})`, () => {
    test('a job whose result the store refuses fails once, readably, and the next job of the service runs', () =>
      withRunningService(store, async (s) => {
        const before = await s.bootCount();
        let runs = 0;
        // A hypervisor that reports a garbled amount: NaN, which neither store takes in an integer column.
        const restart: Task<'restart'> = async (tc) => {
          runs++;
          return { ...(await TASKS.restart(tc)), cpu: Number.NaN };
        };
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/stop`)).status, 200);
        s.worker({ restart });
        await waitForStatus(s.t, s.token, s.id, 'stopped');

        const [, restarted, stopped] = await s.jobs();
        assert.equal(restarted.action, 'restart');
        assert.equal(restarted.status, 'failed');
        assert.equal(restarted.error, 'The result of restart could not be saved');
        assert.equal(restarted.attempts, 1);
        assert.equal(runs, 1, 'the job is not run again');
        assert.equal(await s.bootCount(), before + 1);
        assert.equal(stopped.action, 'stop');
        assert.equal(stopped.status, 'succeeded');
        const details = (await call(s.t, s.token, 'GET', `service/${s.id}/details`)).body.data;
        assert.equal(details.cpu, 1, 'the refused value was not saved');
      }));

    test('a job whose worker keeps dying fails after its attempts, and the next job of the service runs', () =>
      withRunningService(store, async (s) => {
        const before = await s.bootCount();
        await call(s.t, s.token, 'POST', `service/${s.id}/restart`);
        await call(s.t, s.token, 'POST', `service/${s.id}/stop`);
        let claims = 0;
        // Every worker that takes the job dies with it: it stops renewing the lease, and never finishes.
        const dies: Task<'restart'> = async () => {
          claims++;
          return never;
        };
        for (let attempt = 1; attempt <= 3; attempt++) {
          const dying = s.dyingWorker({ restart: dies });
          await until(() => claims === attempt, `attempt ${attempt}`);
          await dying.die();
        }
        s.worker();
        await waitForStatus(s.t, s.token, s.id, 'stopped');

        const [, restarted, stopped] = await s.jobs();
        assert.equal(restarted.status, 'failed', 'not run a fourth time');
        assert.equal(restarted.attempts, 3);
        assert.equal(restarted.error, 'Gave up after 3 attempts: the worker running it stopped');
        assert.equal(claims, 3);
        assert.equal(await s.bootCount(), before, 'no attempt rebooted');
        assert.equal(stopped.status, 'succeeded');
      }));

    test('a backup whose job is given up after its workers kept dying is failed (0 GB), not creating for ever', () =>
      withRunningService(store, async (s) => {
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/backup/create`)).status, 200);
        await call(s.t, s.token, 'POST', `service/${s.id}/stop`);
        let claims = 0;
        // Every worker that takes the backup dies with it: its task never ends, failed or not.
        const dies: Task<'backup_create'> = async () => {
          claims++;
          return never;
        };
        for (let attempt = 1; attempt <= 3; attempt++) {
          const dying = s.dyingWorker({ backup_create: dies });
          await until(() => claims === attempt, `attempt ${attempt}`);
          await dying.die();
        }
        s.worker();
        await waitForStatus(s.t, s.token, s.id, 'stopped');

        const [, backedUp, stopped] = await s.jobs();
        assert.equal(backedUp.action, 'backup_create');
        assert.equal(backedUp.status, 'failed', 'not run a fourth time');
        assert.equal(backedUp.error, 'Gave up after 3 attempts: the worker running it stopped');
        assert.equal(stopped.status, 'succeeded');
        const backups = (await call(s.t, s.token, 'GET', `service/${s.id}/backups`)).body.data;
        assert.equal(backups.length, 1);
        assert.equal(backups[0].status, 'failed');
        assert.equal(backups[0].size_gb, 0);
      }));

    test('a backup whose job is given up after its workers kept dying, the first having stored it, leaves nothing of it in the backup store or on the server', () =>
      withRunningService(store, async (s) => {
        const backupId = await creationDiesEveryAttempt(s);
        const w = s.worker();
        await waitForStatus(s.t, s.token, s.id, 'stopped');
        // Its stop waits for the run under way: the job's end, then the removal from the store.
        await w.stop(1000);
        const jobs = await s.jobs();
        const backedUp = jobs.find((j) => j.action === 'backup_create');
        assert.equal(backedUp.status, 'failed', 'not run a fourth time');
        assert.equal(backedUp.error, 'Gave up after 3 attempts: the worker running it stopped');
        assert.equal(jobs.findLast((j) => j.action === 'stop').status, 'succeeded');
        const [b] = await resellerBackups(s);
        assert.deepEqual([b.backup_id, b.status, b.size_gb], [backupId, 'failed', 0]);
        assert.deepEqual(await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`), [], 'its objects went');
        assert.deepEqual(await checkpointsOf(s, backupId), [], "the server's checkpoint of it went");
      }));

    test('a backup whose job is given up while its server does not answer for the clean-up is failed (0 GB); its checkpoint goes with its deletion', () =>
      withRunningService(store, async (s) => {
        const backupId = await creationDiesEveryAttempt(s);
        const refusing = interceptDriver(s.t.driver!, {
          async abandonExport() {
            throw new DriverError('Simulated: the host does not answer', { transient: true });
          },
        });
        const w = s.worker({}, { driver: refusing });
        await waitForStatus(s.t, s.token, s.id, 'stopped');
        await w.stop(1000);
        const backedUp = (await s.jobs()).find((j) => j.action === 'backup_create');
        assert.equal(backedUp.status, 'failed');
        assert.equal(backedUp.error, 'Gave up after 3 attempts: the worker running it stopped');
        const [b] = await resellerBackups(s);
        assert.deepEqual([b.backup_id, b.status, b.size_gb], [backupId, 'failed', 0]);
        assert.deepEqual(await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`), [], 'its objects went');
        assert.deepEqual(
          await checkpointsOf(s, backupId),
          [backupId],
          'left on the server, as it did not answer',
        );
        const again = s.worker();
        assert.equal(
          (await call(s.t, s.token, 'POST', `service/${s.id}/backup/delete/${backupId}`)).status,
          200,
        );
        await until(async () => (await resellerBackups(s)).length === 0, 'the backup deleted');
        await again.stop(1000);
        assert.deepEqual(await checkpointsOf(s, backupId), [], 'its deletion dropped the checkpoint');
      }));

    test('a backup whose job is given up while the backup store does not answer is failed (0 GB); the worker runs on, and its deletion removes what was stored', () =>
      withRunningService(store, async (s) => {
        const backupId = await creationDiesEveryAttempt(s);
        const unreachable = unreachableStore(s, 'remove');
        const w = s.worker({}, { backups: unreachable.deps });
        await waitForStatus(s.t, s.token, s.id, 'stopped');
        await w.stop(1000);
        const jobs = await s.jobs();
        assert.equal(jobs.find((j) => j.action === 'backup_create').status, 'failed');
        assert.equal(jobs.findLast((j) => j.action === 'stop').status, 'succeeded', 'the next job ran');
        assert.equal(unreachable.calls(), 1, 'it tried the store once');
        const [b] = await resellerBackups(s);
        assert.deepEqual([b.backup_id, b.status, b.size_gb], [backupId, 'failed', 0]);
        assert.notDeepEqual(await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`), [], 'left in the store');
        // The record's deletion removes them.
        const again = s.worker();
        assert.equal(
          (await call(s.t, s.token, 'POST', `service/${s.id}/backup/delete/${backupId}`)).status,
          200,
        );
        assert.equal((await jobEnd(s, 'backup_delete')).status, 'succeeded');
        await again.stop(1000);
        assert.deepEqual(await resellerBackups(s), []);
        assert.deepEqual(await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`), []);
      }));

    test('a backup deletion given up after its workers kept dying, the first having removed its objects, shows the backup failed (0 GB)', () =>
      withRunningService(store, async (s) => {
        const backupId = await takeBackup(s);
        const before = await s.bootCount();
        await deletionDiesEveryAttempt(s, backupId, { firstRemoves: true });
        assert.deepEqual(await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`), [], 'its objects went');
        const [b] = await resellerBackups(s);
        assert.deepEqual([b.backup_id, b.status, b.size_gb], [backupId, 'failed', 0], 'not available: gone');
        // Nothing to restore: refused as a failed backup is, rather than a restore that fails.
        const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/restore/${backupId}`);
        assert.deepEqual([res.status, res.body.error_code], [400, 'invalid_state']);
        assert.equal(await s.bootCount(), before);
      }));

    test('a backup deletion given up after its workers kept dying, its objects still there, leaves the backup available and restorable', () =>
      withRunningService(store, async (s) => {
        const backupId = await takeBackup(s);
        await deletionDiesEveryAttempt(s, backupId, { firstRemoves: false });
        const [b] = await resellerBackups(s);
        assert.deepEqual([b.backup_id, b.status], [backupId, 'available']);
        assert.ok(b.size_gb > 0, 'it still counts');
        const w = s.worker();
        assert.equal(
          (await call(s.t, s.token, 'POST', `service/${s.id}/backup/restore/${backupId}`)).status,
          200,
        );
        await waitForStatus(s.t, s.token, s.id, 'running');
        await w.stop(1000);
        const restore = (await s.jobs()).findLast((j) => j.action === 'backup_restore');
        assert.equal(restore.status, 'succeeded', restore.error);
        assert.equal((await resellerBackups(s))[0].status, 'available');
      }));

    test('a backup deletion given up while the backup store does not answer leaves the backup available; the worker runs on', () =>
      withRunningService(store, async (s) => {
        const backupId = await takeBackup(s);
        const unreachable = unreachableStore(s, 'manifest');
        await call(s.t, s.token, 'POST', `service/${s.id}/backup/delete/${backupId}`);
        await call(s.t, s.token, 'POST', `service/${s.id}/stop`);
        await diesEveryAttempt(s, backupId, true);
        const w = s.worker({}, { backups: unreachable.deps });
        await waitForStatus(s.t, s.token, s.id, 'stopped');
        await w.stop(1000);
        const jobs = await s.jobs();
        assert.equal(jobs.find((j) => j.action === 'backup_delete').status, 'failed');
        assert.equal(jobs.findLast((j) => j.action === 'stop').status, 'succeeded', 'the next job ran');
        assert.equal(unreachable.calls(), 1, 'it looked in the store once');
        const [b] = await resellerBackups(s);
        assert.deepEqual(
          [b.backup_id, b.status],
          [backupId, 'available'],
          'as it was: the store could not say',
        );
        // The next deletion finds out, and removes what is left of it.
        const again = s.worker();
        await call(s.t, s.token, 'POST', `service/${s.id}/backup/delete/${backupId}`);
        await waitForStatus(s.t, s.token, s.id, 'stopped');
        await again.stop(1000);
        assert.deepEqual(await resellerBackups(s), []);
      }));

    test('settling a backup whose deletion was given up leaves a change made since as it is', () =>
      withRunningService(store, async (s) => {
        const backupId = await takeBackup(s);
        const { db } = s.t.ctx.store;
        const { archive } = backupDeps(s.t.ctx);
        const leftByEnd = await findBackupById(db, backupId);
        assert.ok(leftByEnd);
        await archive.remove(s.id, backupId);
        // A newer deletion was accepted meanwhile: it shows `deleting`, its own job settles it.
        await setBackupStatus(db, backupId, 'deleting', leftByEnd.updatedAt + 1);
        await settleGivenUp(db, archive, leftByEnd, leftByEnd.updatedAt + 2, s.t.app.log);
        assert.equal((await findBackupById(db, backupId))?.status, 'deleting');
        // Back `available` since (a later change than the give-up's): not this settling's either.
        await setBackupStatus(db, backupId, 'available', leftByEnd.updatedAt + 3);
        await settleGivenUp(db, archive, leftByEnd, leftByEnd.updatedAt + 4, s.t.app.log);
        assert.equal((await findBackupById(db, backupId))?.status, 'available');
        // As the give-up left it: settled.
        const current = await findBackupById(db, backupId);
        assert.ok(current);
        await settleGivenUp(db, archive, current, current.updatedAt + 5, s.t.app.log);
        assert.deepEqual(
          [(await findBackupById(db, backupId))?.status, (await findBackupById(db, backupId))?.sizeGb],
          ['failed', 0],
        );
      }));

    test('removing what a given-up backup creation stored leaves a backup changed since as it is', () =>
      withRunningService(store, async (s) => {
        const backupId = await takeBackup(s);
        const { db } = s.t.ctx.store;
        const { archive } = backupDeps(s.t.ctx);
        const objects = await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`);
        assert.notDeepEqual(objects, []);
        const before = await findBackupById(db, backupId);
        assert.ok(before);
        await setBackupStatus(db, backupId, 'failed', before.updatedAt + 1, 0);
        const leftByEnd = await findBackupById(db, backupId);
        assert.ok(leftByEnd);
        // A deletion of the failed backup was accepted since: its own job removes it.
        await setBackupStatus(db, backupId, 'deleting', leftByEnd.updatedAt + 1);
        await removeGivenUpObjects(db, archive, leftByEnd, s.t.app.log);
        assert.deepEqual(await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`), objects);
        // As the end left it: removed.
        await setBackupStatus(db, backupId, 'failed', leftByEnd.updatedAt + 2, 0);
        const current = await findBackupById(db, backupId);
        assert.ok(current);
        await removeGivenUpObjects(db, archive, current, s.t.app.log);
        assert.deepEqual(await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`), []);
      }));

    test('a restore given up after its workers kept dying leaves the backup available: the next scheduled backup rotates it out', () =>
      withRunningService(store, async (s) => {
        const first = s.worker();
        const backupId = await scheduledBackup(s);
        await first.stop(1000);
        assert.equal(
          (await call(s.t, s.token, 'POST', `service/${s.id}/backup/restore/${backupId}`)).status,
          200,
        );
        await restoreDiesEveryAttempt(s);
        s.worker();
        const restore = await jobEnd(s, 'backup_restore');
        assert.equal(restore.status, 'failed', 'not run a fourth time');
        assert.equal(restore.error, 'Gave up after 3 attempts: the worker running it stopped');
        assert.deepEqual(
          (await resellerBackups(s)).map((b) => [b.backup_id, b.status]),
          [[backupId, 'available']],
          'not restoring for ever',
        );
        // The quota full with it: the next scheduled backup fits once it is rotated out (only
        // `available` scheduled backups are), as a backup left `restoring` never would be.
        const { db } = s.t.ctx.store;
        await db.updateTable('services').set({ backup: 1 }).where('id', '=', s.id).execute();
        await db.updateTable('backups').set({ size_gb: 1 }).where('id', '=', backupId).execute();
        const next = await scheduledBackup(s);
        assert.deepEqual(
          (await resellerBackups(s)).map((b) => [b.backup_id, b.status, b.kind]),
          [[next, 'available', 'scheduled']],
        );
      }));

    test('a restore given up after its workers kept dying leaves a deletion accepted meanwhile as it is: the deletion removes the backup', () =>
      withRunningService(store, async (s) => {
        const backupId = await takeBackup(s);
        const path = `service/${s.id}/backup`;
        assert.equal((await call(s.t, s.token, 'POST', `${path}/restore/${backupId}`)).status, 200);
        await restoreDiesEveryAttempt(s, async () => {
          // While the first attempt restores (the backup shows `restoring`), a deletion is accepted.
          assert.equal((await call(s.t, s.token, 'POST', `${path}/delete/${backupId}`)).status, 200);
        });
        // The deletion's task waits until the backup is looked at, the restore given up.
        let release = () => {};
        const released = new Promise<void>((r) => {
          release = r;
        });
        const held: Task<'backup_delete'> = async (tc) => {
          await released;
          return TASKS.backup_delete(tc);
        };
        s.worker({ backup_delete: held });
        assert.equal((await jobEnd(s, 'backup_restore')).status, 'failed');
        assert.deepEqual(
          (await resellerBackups(s)).map((b) => [b.backup_id, b.status]),
          [[backupId, 'deleting']],
        );
        const again = await call(s.t, s.token, 'POST', `${path}/delete/${backupId}`);
        assert.equal(again.body.error_code, 'invalid_state', 'being deleted still');
        release();
        assert.equal((await jobEnd(s, 'backup_delete')).status, 'succeeded');
        assert.deepEqual(await resellerBackups(s), []);
      }));

    test('a job whose worker died waits the retry backoff before it runs again, and says so', () =>
      withRunningService(store, async (s) => {
        await call(s.t, s.token, 'POST', `service/${s.id}/restart`);
        const now = s.t.ctx.clock.now();
        // A worker claims the job and dies at once: its lease is already over.
        const [job] = await claimJobs(s.t.ctx.store, 'dead-worker', 1, now, Date.now() - 1);
        assert.ok(job);
        assert.equal(await recoverExpiredJobs(s.t.ctx.store, Date.now(), now, 60_000), 1);
        const row = await s.t.ctx.store.db
          .selectFrom('jobs')
          .select(['status', 'run_at'])
          .where('id', '=', job.id)
          .executeTakeFirstOrThrow();
        assert.equal(row.status, 'queued');
        assert.ok(Number(row.run_at) >= now + 48_000, `run_at ${Number(row.run_at) - now} ms after now`);
        const [, restarted] = await s.jobs();
        assert.equal(restarted.error, 'Attempt 1 did not finish, retrying: the worker running it stopped');
      }));

    test('a job that keeps failing transiently fails after its attempts with the last error; the next job runs', () =>
      withRunningService(store, async (s) => {
        let runs = 0;
        const restart: Task<'restart'> = async () => {
          runs++;
          throw new DriverError(`Host busy (${runs})`, { transient: true });
        };
        await call(s.t, s.token, 'POST', `service/${s.id}/restart`);
        await call(s.t, s.token, 'POST', `service/${s.id}/stop`);
        s.worker({ restart });
        await waitForStatus(s.t, s.token, s.id, 'stopped');
        const [, restarted, stopped] = await s.jobs();
        assert.equal(restarted.status, 'failed');
        assert.equal(restarted.attempts, 3);
        assert.equal(restarted.error, 'Host busy (3)');
        assert.equal(runs, 3);
        assert.equal(stopped.status, 'succeeded');
      }));

    test('a step the store refuses for now (a deadlock broken on this side) is tried again, not failed', () =>
      withRunningService(store, async (s) => {
        let runs = 0;
        const restart: Task<'restart'> = async (tc) => {
          runs++;
          // As pg reports it: PostgreSQL broke a deadlock by failing this statement.
          if (runs === 1) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
          return TASKS.restart(tc);
        };
        const before = await s.bootCount();
        await call(s.t, s.token, 'POST', `service/${s.id}/restart`);
        s.worker({ restart });
        await until(async () => (await s.jobs())[1]?.status === 'succeeded', 'the restart succeeded');
        const [, restarted] = await s.jobs();
        assert.equal(restarted.attempts, 2);
        assert.equal(runs, 2);
        assert.equal(await s.bootCount(), before + 1);
        await waitForStatus(s.t, s.token, s.id, 'running');
      }));
  });
}

/** Takes a backup of the fixture's service with a worker of its own (stopped after); its id. */
async function takeBackup(s: ServiceFixture): Promise<string> {
  const w = s.worker();
  assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/backup/create`)).status, 200);
  await waitForStatus(s.t, s.token, s.id, 'running');
  await w.stop(1000);
  const [b] = await resellerBackups(s);
  assert.equal(b.status, 'available');
  return b.backup_id;
}

/**
 * Takes a scheduled backup of the fixture's service, queued as the scheduler queues it, with the
 * worker the test runs; its id.
 */
async function scheduledBackup(s: ServiceFixture): Promise<string> {
  const { db } = s.t.ctx.store;
  const { reseller_id } = await db
    .selectFrom('services')
    .select('reseller_id')
    .where('id', '=', s.id)
    .executeTakeFirstOrThrow();
  const operation = backupCreateOperation('scheduled');
  const request = { resellerId: reseller_id, serviceId: s.id, ...operation };
  assert.equal((await requestOperation(db, request, Date.now())).kind, 'queued');
  const job = await jobEnd(s, 'backup_create');
  assert.equal(job.status, 'succeeded', job.error);
  return operation.params.backup_id ?? '';
}

/** The service's newest job of `action` (as the API lists it), once it has ended. */
async function jobEnd(s: ServiceFixture, action: string): Promise<any> {
  const newest = async () => (await s.jobs()).findLast((j) => j.action === action);
  await until(async () => ['succeeded', 'failed'].includes((await newest())?.status), `${action} to end`);
  return newest();
}

/** The app's backup means, its archive's `method` failing as a store out of reach does; `calls` counts them. */
function unreachableStore(s: ServiceFixture, method: 'manifest' | 'remove') {
  const app = backupDeps(s.t.ctx);
  let calls = 0;
  const fails = async () => {
    calls++;
    throw new BackupStoreError('Backup store test: cannot reach the bucket: connection refused', {
      transient: true,
    });
  };
  const deps: BackupDeps = { ...app, archive: { ...app.archive, [method]: fails } };
  return { deps, calls: () => calls };
}

/** The service's backups as the reseller lists them. */
async function resellerBackups(s: ServiceFixture): Promise<any[]> {
  const res = await call(s.t, s.token, 'GET', `service/${s.id}/backups`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

/**
 * Asks for a backup, then a stop; every worker that takes the backup_create dies with it (3
 * attempts): the first once its export is stored (data and manifest) and its checkpoint kept on
 * the server, the others at once. Returns the backup's id; the job waits for its give-up.
 */
async function creationDiesEveryAttempt(s: ServiceFixture): Promise<string> {
  assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/backup/create`)).status, 200);
  await call(s.t, s.token, 'POST', `service/${s.id}/stop`);
  const [{ backup_id: backupId }] = await resellerBackups(s);
  let claims = 0;
  let stored = false;
  let firstEnded: unknown;
  const dies: Task<'backup_create'> = async (tc) => {
    claims++;
    if (claims > 1) return never;
    const exportDisk: HypervisorDriver['exportDisk'] = async (...args) => {
      const exported = await tc.driver.exportDisk(...args);
      return {
        ...exported,
        async commit() {
          await exported.commit();
          stored = true;
          return never;
        },
      };
    };
    // The first attempt's end other than by dying is the reason it stored nothing: said at once.
    return TASKS.backup_create({ ...tc, driver: { ...tc.driver, exportDisk } }).catch((err) => {
      firstEnded = err;
      throw err;
    });
  };
  for (let attempt = 1; attempt <= 3; attempt++) {
    const dying = s.dyingWorker({ backup_create: dies });
    await until(() => claims === attempt, `attempt ${attempt}`);
    if (attempt === 1) {
      await until(() => {
        if (firstEnded) throw new Error(`the first attempt ended before it stored the backup: ${firstEnded}`);
        return stored;
      }, 'the backup stored');
      assert.ok(
        (await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`)).includes(`${s.id}/${backupId}/manifest`),
      );
      assert.deepEqual(await checkpointsOf(s, backupId), [backupId]);
    }
    await dying.die();
  }
  return backupId;
}

/** The simulated server's checkpoints of the backup. */
async function checkpointsOf(s: ServiceFixture, backupId: string): Promise<string[]> {
  const rows = await s.t.ctx.store.db
    .selectFrom('sim_checkpoints')
    .select('name')
    .where('vm_id', '=', s.id)
    .where('name', '=', backupId)
    .execute();
  return rows.map((r) => r.name);
}

/**
 * Every worker that takes the queued backup_delete dies with it (3 attempts). With `firstRemoves`
 * the first runs the real task, which removes the backup's objects, and dies dropping the VM's
 * checkpoint; the others die at once.
 */
async function diesEveryAttempt(s: ServiceFixture, backupId: string, firstRemoves: boolean) {
  let claims = 0;
  let dropping = false;
  const dies: Task<'backup_delete'> = async (tc) => {
    claims++;
    if (claims > 1 || !firstRemoves) return never;
    const dyingDrop = async () => {
      dropping = true;
      return never;
    };
    return TASKS.backup_delete({ ...tc, driver: { ...tc.driver, dropCheckpoint: dyingDrop } });
  };
  for (let attempt = 1; attempt <= 3; attempt++) {
    const dying = s.dyingWorker({ backup_delete: dies });
    await until(() => claims === attempt, `attempt ${attempt}`);
    if (attempt === 1 && firstRemoves) {
      await until(() => dropping, 'the objects removed');
      assert.deepEqual(await s.t.ctx.backupStore.list(`${s.id}/${backupId}/`), []);
    }
    await dying.die();
  }
}

/** Asks for the backup's deletion, whose every attempt dies (diesEveryAttempt); a worker gives it up. */
async function deletionDiesEveryAttempt(
  s: ServiceFixture,
  backupId: string,
  { firstRemoves }: { readonly firstRemoves: boolean },
) {
  assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/backup/delete/${backupId}`)).status, 200);
  await diesEveryAttempt(s, backupId, firstRemoves);
  const w = s.worker();
  await waitForStatus(s.t, s.token, s.id, 'running');
  // Its stop waits for the run under way: the job's end, then the look in the store.
  await w.stop(1000);
  const job = (await s.jobs()).find((j) => j.action === 'backup_delete');
  assert.equal(job.status, 'failed', 'not run a fourth time');
  assert.equal(job.error, 'Gave up after 3 attempts: the worker running it stopped');
}

/**
 * Every worker that takes the queued backup_restore dies with it (3 attempts), inside the driver's
 * import of the disk: the backup shows `restoring` then. `during` runs while the first one is
 * there.
 */
async function restoreDiesEveryAttempt(s: ServiceFixture, during?: () => Promise<void>) {
  let importing = 0;
  const dies: Task<'backup_restore'> = (tc) => {
    const dyingImport = async () => {
      importing++;
      return never;
    };
    return TASKS.backup_restore({ ...tc, driver: { ...tc.driver, importDisk: dyingImport } });
  };
  for (let attempt = 1; attempt <= 3; attempt++) {
    const dying = s.dyingWorker({ backup_restore: dies });
    await until(() => importing === attempt, `attempt ${attempt}`);
    if (attempt === 1) {
      assert.equal((await resellerBackups(s))[0].status, 'restoring');
      await during?.();
    }
    await dying.die();
  }
}
