/**
 * A request accepted while the job before it ends (PostgreSQL, where the two run at the same
 * time): the service's count of pending jobs and its projected status stay true whichever
 * commits first. Both read the service and then write a count computed from what they read; the
 * job's end locks the row to its commit and moves the job sequence, so the request either is
 * counted by the end or fails its compare-and-set and is checked again. SQLite's writers take
 * turns, so this cannot happen there.
 *
 * The same holds at a job's start, where the check of the VM's power may correct the service.
 *
 * The interleaving is forced: another connection holds the service's row while the job ends
 * (or its start corrects the service) and the request arrives, so both wait on it; then it
 * lets go.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { powerCorrection } from '../../src/domain/power-drift.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { correctIdleService } from '../../src/jobs/power-check.ts';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import type { Database } from '../../src/store/schema.ts';
import { call, waitForStatus } from '../helpers/app.ts';
import { until, withRunningService } from '../helpers/job-worker.ts';
import { lockWaiters } from '../helpers/pg-lock-waits.ts';
import { testStores } from '../helpers/stores.ts';

const stores = testStores().filter((s) => s === 'postgres');

/** What the tests check of the service: its status, its count of pending jobs, its projection. */
const bookkeeping = (db: Kysely<Database>, id: string) =>
  db
    .selectFrom('services')
    .select(['status', 'pending_jobs', 'projected_status'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

/**
 * Holds the service's row from another connection while `meanwhile` runs, then lets go.
 * `waiters(n, what)` waits until n backends of the test's database wait for a lock.
 */
async function holdingTheRow(
  url: string | undefined,
  serviceId: string,
  meanwhile: (waiters: (n: number, what: string) => Promise<void>) => Promise<void>,
): Promise<void> {
  const holder = new pg.Client(url);
  await holder.connect();
  try {
    await holder.query('begin');
    await holder.query('select 1 from services where id = $1 for update', [serviceId]);
    await meanwhile((n, what) => until(async () => (await lockWaiters(holder)) >= n, what));
    await holder.query('commit');
  } finally {
    await holder.query('rollback').catch(() => {});
    await holder.end();
  }
}

describe('a request accepted while the job before it ends', {
  skip: stores.length === 0 && 'needs PostgreSQL (npm test starts one)',
}, () => {
  for (const store of stores) {
    for (const first of ['the end', 'the request'] as const) {
      test(`the count of pending jobs and the projection stay true, ${first} waiting first (${store})`, () =>
        withRunningService(store, async (s) => {
          const db = s.t.ctx.store.db;
          const gated = () => {
            let open!: () => void;
            const gate = new Promise<void>((r) => {
              open = r;
            });
            return { gate, open, started: false };
          };
          const restartGate = gated();
          const stopGate = gated();
          const restart: Task<'restart'> = async (tc) => {
            restartGate.started = true;
            await restartGate.gate;
            return TASKS.restart(tc);
          };
          const stopTask: Task<'stop'> = async (tc) => {
            stopGate.started = true;
            await stopGate.gate;
            return TASKS.stop(tc);
          };
          assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
          s.worker({ restart, stop: stopTask });
          await until(() => restartGate.started, 'the restart to start');

          let stop: Promise<{ status: number; body: any }> | undefined;
          await holdingTheRow(s.t.ctx.config.databaseUrl, s.id, async (waiters) => {
            const end = () => restartGate.open();
            const request = () => {
              stop = call(s.t, s.token, 'POST', `service/${s.id}/stop`);
            };
            const [one, two] = first === 'the end' ? [end, request] : [request, end];
            one();
            await waiters(1, `${first} to wait for the row`);
            two();
            await waiters(2, 'the other to wait for the row too');
          });
          const accepted = await stop;
          assert.equal(accepted?.status, 200, JSON.stringify(accepted?.body));

          const service = () => bookkeeping(db, s.id);
          await until(
            async () => (await s.jobs()).some((j) => j.action === 'restart' && j.status === 'succeeded'),
            'the restart to end',
          );
          // The stop is accepted and not yet done: one job pending, the projection its outcome.
          const between = await service();
          assert.equal(between.pending_jobs, 1, 'the stop counted');
          assert.equal(between.projected_status, 'stopped', 'the projection includes the stop');

          stopGate.open();
          await waitForStatus(s.t, s.token, s.id, 'stopped');
          assert.deepEqual(await service(), {
            status: 'stopped',
            pending_jobs: 0,
            projected_status: 'stopped',
          });
          const jobs = await s.jobs();
          assert.deepEqual(
            jobs.map((j) => `${j.action} ${j.status}`),
            ['create succeeded', 'restart succeeded', 'stop succeeded'],
          );
        }));
    }
  }

  for (const store of stores) {
    test(`a request accepted while a job's start corrects the service is checked against the correction (${store})`, () =>
      withRunningService(store, async (s) => {
        const db = s.t.ctx.store.db;
        // Powered off outside the API: the next job's start finds it and corrects the service to stopped.
        await outside.powerOff(db, s.id);
        const reset = await call(s.t, s.token, 'POST', `service/${s.id}/reset-password`, {
          password: 'New-pass-word-2',
        });
        assert.equal(reset.status, 200);
        let open!: () => void;
        const gate = new Promise<void>((r) => {
          open = r;
        });
        let inspecting = false;
        const real = s.t.driver!;
        const driver = {
          ...real,
          inspect: async (id: string) => {
            inspecting = true;
            await gate;
            return real.inspect(id);
          },
        };
        s.worker({}, { driver });
        await until(() => inspecting, 'the check at the start of the job');

        let restart: Promise<{ status: number; body: any }> | undefined;
        await holdingTheRow(s.t.ctx.config.databaseUrl, s.id, async (waiters) => {
          open();
          await waiters(1, 'the correction to wait for the row');
          // Accepted against `running` as the request reads it, before the correction commits.
          restart = call(s.t, s.token, 'POST', `service/${s.id}/restart`);
          await waiters(2, 'the restart request to wait for the row too');
        });
        const answer = await restart;
        // Checked again against the corrected service: a stopped server cannot restart.
        assert.equal(answer?.status, 400, JSON.stringify(answer?.body));
        assert.equal(answer?.body.error_code, 'invalid_state');
        await waitForStatus(s.t, s.token, s.id, 'stopped');
        assert.deepEqual(await bookkeeping(db, s.id), {
          status: 'stopped',
          pending_jobs: 0,
          projected_status: 'stopped',
        });
        assert.deepEqual(
          (await s.jobs()).map((j) => `${j.action} ${j.status}`),
          ['create succeeded', 'reset_password succeeded'],
        );
      }));
  }

  for (const store of stores) {
    test(`a request accepted while the reconciler corrects an idle service is checked against the correction (${store})`, () =>
      withRunningService(store, async (s) => {
        const db = s.t.ctx.store.db;
        await outside.powerOff(db, s.id);
        // The periodic pass's read, before it asks the hypervisor.
        const read = await db
          .selectFrom('services')
          .select(['id', 'reseller_id', 'job_seq'])
          .where('id', '=', s.id)
          .executeTakeFirstOrThrow();
        const idle = {
          id: read.id,
          resellerId: read.reseller_id,
          status: 'running' as const,
          jobSeq: read.job_seq,
        };
        const correction = powerCorrection('running', 'stopped');
        assert.ok(correction);
        let corrected: Promise<boolean> | undefined;
        let restart: Promise<{ status: number; body: any }> | undefined;
        await holdingTheRow(s.t.ctx.config.databaseUrl, s.id, async (waiters) => {
          corrected = correctIdleService(
            { db, driver: s.t.driver!, clock: s.t.ctx.clock, log: s.t.app.log },
            idle,
            correction,
          );
          await waiters(1, 'the correction to wait for the row');
          restart = call(s.t, s.token, 'POST', `service/${s.id}/restart`);
          await waiters(2, 'the restart request to wait for the row too');
        });
        assert.equal(await corrected, true);
        const answer = await restart;
        assert.equal(answer?.status, 400, JSON.stringify(answer?.body));
        assert.equal(answer?.body.error_code, 'invalid_state');
        assert.deepEqual(await bookkeeping(db, s.id), {
          status: 'stopped',
          pending_jobs: 0,
          projected_status: 'stopped',
        });
      }));
  }
});
