/**
 * A worker that stops aborts the tasks still running after its grace period (their
 * AbortSignal fires) and puts their jobs back in the queue at once, rather than leaving them
 * `running` until their lease runs out.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Task } from '../../src/jobs/task.ts';
import { findService } from '../../src/store/repos/services.ts';
import { call, waitForStatus } from '../helpers/app.ts';
import { until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`worker shutdown past the grace period (${store})`, () => {
    test('the task is aborted, its job queued again at once, and the next worker runs it', () =>
      withRunningService(store, async (s) => {
        const { db } = s.t.ctx.store;
        let started = false;
        let aborted = false;
        let driverRefused = false;
        // A restart that outlasts any grace period, but listens to its signal.
        const slow: Task<'restart'> = async (tc) => {
          started = true;
          await new Promise((_, reject) =>
            tc.signal.addEventListener('abort', () => {
              aborted = true;
              reject(tc.signal.reason);
            }),
          );
          return {};
        };
        let driverCheck: Promise<void> = Promise.resolve();
        const watch: Task<'restart'> = async (tc) => {
          // Once aborted, the task's driver refuses new calls.
          tc.signal.addEventListener('abort', () => {
            driverCheck = tc.driver.start(tc.service.id).then(
              () => {},
              () => {
                driverRefused = true;
              },
            );
          });
          return slow(tc);
        };
        await call(s.t, s.token, 'POST', `service/${s.id}/restart`);
        const worker = s.worker({ restart: watch });
        await until(() => started, 'the restart to start');

        await worker.stop(100);
        await driverCheck;
        assert.ok(aborted, 'the task saw its signal fire');
        assert.ok(driverRefused, 'the driver refused a call after the abort');
        // Back in the queue when stop() returns, put there by the stop: no other worker runs to
        // recover an expired lease, and the error names the stop, not a lost lease.
        const job = await s.jobRow('restart');
        assert.equal(job.status, 'queued');
        assert.equal(job.locked_by, null);
        assert.equal(job.error, 'Attempt 1 did not finish, retrying: the worker running it stopped');
        const service = await findService(db, s.id);
        assert.equal(service?.status, 'running', 'not left restarting');
        assert.equal(service?.activeJobId, null);

        s.worker();
        await until(async () => (await s.jobs()).at(-1).status === 'succeeded', 'the re-run');
        await waitForStatus(s.t, s.token, s.id, 'running');
        assert.equal((await s.jobs()).at(-1).attempts, 2);
      }));

    test('a job that finishes within the grace period keeps its lease while its worker stops: no other worker runs it meanwhile', () =>
      withRunningService(store, async (s) => {
        let runs = 0;
        let release = () => {};
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        const restart: Task<'restart'> = async () => {
          runs++;
          await held;
          return {};
        };
        await call(s.t, s.token, 'POST', `service/${s.id}/restart`);
        // Long enough that a loaded machine's pauses between renewals (every third of a lease)
        // stay well inside it (1.2 s leases let a pause of 0.8 s hand the job to the other
        // worker in a CI rehearsal).
        const leaseMs = 3000;
        const stopping = s.worker({ restart }, { leaseMs });
        await until(() => runs === 1, 'the restart to start');
        const lockedUntil = async () => (await s.jobRow('restart')).locked_until ?? 0;
        const claimed = await lockedUntil();
        const stopped = stopping.stop(60_000);
        // Another process's worker, which recovers the jobs of leases that ran out.
        s.worker({ restart }, { leaseMs });
        // Until the stopping worker has renewed its lease two leases past the end its claim gave
        // it: that lease would have run out by then, had the worker not renewed it while it stopped.
        await until(
          async () => (await lockedUntil()) >= claimed + 2 * leaseMs,
          'the lease renewed while stopping',
        );
        assert.equal(runs, 1, 'run once, by the worker that is stopping');
        release();
        await stopped;
        await until(async () => (await s.jobs()).at(-1).status === 'succeeded', 'the restart to end');
        assert.equal((await s.jobs()).at(-1).attempts, 1);
        assert.equal(runs, 1);
      }));
  });
}
