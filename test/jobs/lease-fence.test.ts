/**
 * A run whose lease ran out without its worker renewing it (the worker cut off from the store,
 * or its job taken by another worker) takes no further step on the hypervisor: not a new driver
 * call, and not the next step of the call under way. Another worker may be running the job by
 * then; two attempts acting on one server at once could undo each other's work (a restore's
 * late attempt deleting the disk the next one restored). A worker that renews its leases keeps
 * running a job for as long as it takes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { BackupStoreError } from '../../src/drivers/backup-store/store.ts';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { FenceDown, fenceRun, fenceSignal, fenceStop, type JobRun } from '../../src/drivers/fence.ts';
import { createIpPool } from '../../src/drivers/ip-pool.ts';
import { createSimulatedDriver } from '../../src/drivers/simulated/simulated-driver.ts';
import { type BackupDeps, backupDeps } from '../../src/jobs/backup-chain.ts';
import { JobLease } from '../../src/jobs/lease.ts';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import type { Database } from '../../src/store/schema.ts';
import { call } from '../helpers/app.ts';
import { waitUntil } from '../helpers/budget.ts';
import { giveToAnotherWorker, until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

const vmOf = (db: Kysely<Database>, id: string) =>
  db.selectFrom('sim_vms').select(['power', 'boot_count']).where('id', '=', id).executeTakeFirstOrThrow();

for (const store of testStores()) {
  test(`a job's run knows itself in its fence: its job, the attempt its claim began, its stop signal (${store})`, () =>
    withRunningService(store, async (s) => {
      const seen: { run?: JobRun; stop?: AbortSignal; fence?: AbortSignal }[] = [];
      const knows: Task<'stop'> = async (tc) => {
        seen.push({ run: fenceRun(), stop: fenceStop(), fence: fenceSignal() });
        if (seen.length === 1) throw new DriverError('the host is busy', { transient: true });
        return TASKS.stop(tc);
      };
      // The fixture's long lease: a loaded machine's pause past a short one would take the first
      // run's fence down (and its stop signal with it) before its failure is written, which is
      // another test's subject (below), not this one's.
      const w = s.worker({ stop: knows });
      assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/stop`)).status, 200);
      await until(async () => (await s.jobRow('stop')).status === 'succeeded', 'the stop done');
      await w.stop(1000);
      const job = await s.jobRow('stop');
      assert.deepEqual(
        seen.map((x) => [x.run?.jobId, x.run?.attempt]),
        [
          [job.id, 1],
          [job.id, 2],
        ],
      );
      // Its stop signal is the lease's own (also aborted when the worker stops), not the fence's.
      assert.ok(seen.every((x) => x.stop instanceof AbortSignal && x.stop !== x.fence && !x.stop.aborted));
    }));

  describe(`a run whose lease ran out (${store})`, () => {
    test('starts no driver call once its lease has run out un-renewed, and writes nothing of the job', () =>
      withRunningService(store, async (s) => {
        const db = s.t.ctx.store.db;
        const driver = s.t.driver!;
        const called: string[] = [];
        const counting: HypervisorDriver = {
          ...driver,
          stop: (...args) => {
            called.push('stop');
            return driver.stop(...args);
          },
        };
        let open!: () => void;
        const gate = new Promise<void>((r) => {
          open = r;
        });
        let signal: AbortSignal | undefined;
        let refused: unknown;
        // A restart whose run is held before it asks the hypervisor anything, then stops the VM.
        const restart: Task<'restart'> = async (tc) => {
          signal = tc.signal;
          await gate;
          try {
            await tc.driver.stop(tc.service.id, { timeoutMs: 1000 });
          } catch (err) {
            refused = err;
            throw err;
          }
          return TASKS.restart(tc);
        };
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
        const w = s.worker({ restart }, { driver: counting, leaseMs: 300 });
        await until(() => signal !== undefined, 'the restart to start');
        const job = await s.jobRow('restart');
        await giveToAnotherWorker(db, job.id);
        // The task is told (its signal), once the lease it had has run out.
        await until(() => signal?.aborted === true, "the run's fence to go down");
        assert.ok(signal?.reason instanceof FenceDown);
        open();
        await until(() => w.running === 0, 'the old run to end');

        assert.ok(refused instanceof FenceDown, `the stop was refused: ${String(refused)}`);
        assert.ok(refused instanceof DriverError && refused.transient);
        assert.deepEqual(called, [], 'the driver was never asked to stop the VM');
        assert.deepEqual(await vmOf(db, s.id), { power: 'running', boot_count: 1 });
        const after = await s.jobRow('restart');
        assert.equal(after.status, 'running', 'still running, for its new owner');
        assert.equal(after.locked_by, 'another-worker');
        assert.equal(after.finished_at, null);
        assert.equal(after.error, null, 'no retry written by the old run');
      }));

    test('the driver call under way takes no further step: a reboot whose lease runs out mid-way does not happen', () =>
      withRunningService(store, async (s) => {
        const db = s.t.ctx.store.db;
        // The simulated hypervisor at full speed: a reboot takes 5 s, far longer than the lease.
        const slow = createSimulatedDriver({
          db,
          ipPool: await createIpPool(db, s.t.ctx.config.simulatedIpPool, Date.now),
          faults: { transient: 0, permanent: 0 },
          speed: 1,
        });
        try {
          assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
          const w = s.worker({}, { driver: slow, leaseMs: 300 });
          // The reboot records the boot it replaces before it sleeps: from then on it is under way.
          await until(async () => (await s.jobRow('restart')).step_marker !== null, 'the reboot to begin');
          await giveToAnotherWorker(db, (await s.jobRow('restart')).id);
          await until(() => w.running === 0, 'the old run to end');

          assert.deepEqual(await vmOf(db, s.id), { power: 'running', boot_count: 1 }, 'not rebooted');
          const after = await s.jobRow('restart');
          assert.equal(after.status, 'running');
          assert.equal(after.locked_by, 'another-worker');
          assert.equal(after.finished_at, null);
        } finally {
          await slow.close();
        }
      }));

    test('a backup whose lease runs out between its export and its write puts nothing in the backup store', () =>
      withRunningService(store, async (s) => {
        const db = s.t.ctx.store.db;
        const app = backupDeps(s.t.ctx);
        let open!: () => void;
        const gate = new Promise<void>((r) => {
          open = r;
        });
        let writing = false;
        let refused: unknown;
        // The archive's write held at its start, after the export, until the test lets it go.
        const held: BackupDeps = {
          ...app,
          archive: {
            ...app.archive,
            async write(...args) {
              writing = true;
              await gate;
              try {
                return await app.archive.write(...args);
              } catch (err) {
                refused = err;
                throw err;
              }
            },
          },
        };
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/backup/create`)).status, 200);
        const w = s.worker({}, { backups: held, leaseMs: 300 });
        await until(() => writing, 'the export to be written');
        const job = await s.jobRow('backup_create');
        await giveToAnotherWorker(db, job.id);
        // No renewal reaches the row from here on: the lease this worker knows ends a lease from now at the latest.
        const given = Date.now();
        await until(() => Date.now() > given + 300, 'the lease to run out');
        open();
        await until(() => w.running === 0, 'the old run to end');

        assert.ok(refused instanceof FenceDown, `the write was refused: ${String(refused)}`);
        assert.deepEqual(await s.t.ctx.backupStore.list(`${s.id}/`, { parts: true }), [], 'nothing stored');
        const [backup] = (await call(s.t, s.token, 'GET', `service/${s.id}/backups`)).body.data;
        assert.equal(backup.status, 'creating', 'left as it was, for the job’s next run');
        assert.equal((await s.jobRow('backup_create')).locked_by, 'another-worker');
      }));

    test('a deletion whose lease runs out before its store fails for good leaves the backup to the job’s next run', () =>
      withRunningService(store, async (s) => {
        const db = s.t.ctx.store.db;
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/backup/create`)).status, 200);
        const first = s.worker();
        const backups = async () => (await call(s.t, s.token, 'GET', `service/${s.id}/backups`)).body.data;
        await until(async () => (await backups())[0]?.status === 'available', 'the backup to be taken');
        const [made] = await backups();
        await first.stop(0);
        const app = backupDeps(s.t.ctx);
        let open!: () => void;
        const gate = new Promise<void>((r) => {
          open = r;
        });
        let removing = false;
        // The store refuses the removal for good, once the test lets it answer.
        const refusing: BackupDeps = {
          ...app,
          archive: {
            ...app.archive,
            async remove() {
              removing = true;
              await gate;
              throw new BackupStoreError('Backup store test: the bucket refuses the deletion', {
                transient: false,
              });
            },
          },
        };
        const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/delete/${made.backup_id}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        const w = s.worker({}, { backups: refusing, leaseMs: 300 });
        await until(() => removing, 'the removal to begin');
        await giveToAnotherWorker(db, (await s.jobRow('backup_delete')).id);
        const given = Date.now();
        await until(() => Date.now() > given + 300, 'the lease to run out');
        open();
        await until(() => w.running === 0, 'the old run to end');

        const [after] = (await call(s.t, s.token, 'GET', `service/${s.id}/backups`)).body.data;
        assert.equal(after.status, 'deleting', 'not settled by the run that lost its lease');
        const job = await s.jobRow('backup_delete');
        assert.equal(job.locked_by, 'another-worker');
        assert.equal(job.finished_at, null);
      }));

    test('a worker that renews its lease runs a job for many leases, to its end', () =>
      withRunningService(store, async (s) => {
        let waited = false;
        // Short enough to be renewed several times within the test; long enough that a loaded
        // machine's pauses between renewals (every third of a lease; the fence goes down at 0.9 of
        // one un-renewed) stay well inside it.
        const leaseMs = 3000;
        // A restart that asks the hypervisor to reboot only once its job's row shows the lease
        // renewed two leases past the end its claim gave it: by then it has run for two leases.
        const restart: Task<'restart'> = async (tc) => {
          const lockedUntil = async () => (await s.jobRow('restart')).locked_until ?? 0;
          const claimed = await lockedUntil();
          await waitUntil(
            'the lease renewed two leases past its claim',
            async () => (await lockedUntil()) >= claimed + 2 * leaseMs || undefined,
            { everyMs: 100 },
          );
          waited = true;
          return TASKS.restart(tc);
        };
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
        const w = s.worker({ restart }, { leaseMs });
        await until(() => waited && w.running === 0, 'the restart to end');
        const job = await s.jobRow('restart');
        assert.equal(job.status, 'succeeded', String(job.error));
        assert.equal(job.attempts, 1, 'one attempt: the lease never ran out');
        assert.equal(await s.bootCount(), 2);
      }));
  });
}

test('a lease’s fence goes down its margin before the lease’s end, keeps the later of two renewals, and stays down', () => {
  const worker = new AbortController();
  const now = Date.now();
  const lease = new JobLease({ jobId: 'job-1', attempt: 1 }, now + 60_000, worker.signal, 6_000);
  lease.check();
  assert.equal(lease.expired(), false);
  // Two renewals whose answers crossed: the earlier end does not shorten the lease.
  lease.renewed(now + 90_000);
  lease.renewed(now + 70_000);
  assert.equal(lease.expired(), false);
  // Down once its end less the margin has passed (no timer: the look at the clock takes it down).
  const ended = new JobLease({ jobId: 'job-2', attempt: 1 }, now + 5_000, worker.signal, 6_000);
  assert.equal(ended.expired(), true);
  assert.ok(ended.signal.reason instanceof FenceDown);
  assert.ok(ended.stop.aborted, 'the task is told to stop');
  assert.throws(() => ended.check(), FenceDown);
  ended.renewed(now + 600_000);
  assert.equal(ended.isDown, true, 'a renewal does not raise it again');
  // The worker's stop reaches the task's signal, and not the fence: a shutdown is no lost lease.
  worker.abort(new Error('The worker is stopping'));
  assert.equal(lease.stop.aborted, true);
  assert.equal(lease.signal.aborted, false);
  lease.check();
  lease.end();
  ended.end();
});
