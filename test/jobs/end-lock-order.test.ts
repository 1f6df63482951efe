/**
 * PostgreSQL: jobs that end together lock their services in the order of the services' ids,
 * whatever order the jobs ended in and whatever each job reports. A group of job ends shares one
 * transaction (src/store/transaction-group.ts) and holds its services' rows to its commit; a
 * request's enqueue takes several services in one statement in the order of their ids
 * (test/store/lock-order.test.ts). Had the group taken them in its jobs' order, or in two
 * statements (a password reset's end, with a result, and a stop's, without, were two shapes of
 * statement), the two could wait for each other crosswise: a deadlock, which PostgreSQL breaks
 * after a second by failing one side.
 *
 * Two services; the larger id's job is queued first, so the jobs' order is the other way round
 * from the services'. Both tasks finish and wait; another connection holds the larger id's row;
 * both jobs then end in one turn, the larger id's first. Once the group waits for the held row,
 * the smaller id's row cannot be locked without waiting: the group has it already. Then the
 * holder lets go, and both jobs succeed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { call, waitForStatus } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { until, withRunningService } from '../helpers/job-worker.ts';
import { lockWaiters, rowFree } from '../helpers/pg-lock-waits.ts';
import { testStores } from '../helpers/stores.ts';

const stores = testStores().filter((s) => s === 'postgres');

/** A task that does its work, then waits for `open` before it returns. */
function held<A extends 'stop' | 'reset_password'>(task: Task<A>) {
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  const state = { done: false, open: () => open() };
  const run: Task<A> = async (tc) => {
    const change = await task(tc);
    state.done = true;
    await gate;
    return change;
  };
  return { run, state };
}

describe('jobs that end together lock their services in the order of their ids (PostgreSQL)', {
  skip: stores.length === 0 && 'needs PostgreSQL (npm test starts one)',
}, () => {
  test('a password reset and a stop, queued the other way round from their services', () =>
    withRunningService('postgres', async (s) => {
      const { t, token } = s;
      // A second running service, made by a worker with the usual tasks.
      const order = await call(t, token, 'POST', 'service/create-order', smallOrder('second.example.com'));
      const other = order.body.data[0].service_id as string;
      assert.equal((await call(t, token, 'POST', `service/${other}/create`)).status, 200);
      const maker = s.worker();
      await waitForStatus(t, token, other, 'running');
      await maker.stop(1000);

      const [small, large] = [s.id, other].sort() as [string, string];
      const reset = held(TASKS.reset_password);
      const stop = held(TASKS.stop);
      // The larger id's job first: a smaller job id than the smaller service's job.
      const asked = [
        await call(t, token, 'POST', `service/${large}/reset-password`, { password: 'Ordered-pass-1' }),
        await call(t, token, 'POST', `service/${small}/stop`),
      ];
      for (const r of asked) assert.equal(r.status, 200, JSON.stringify(r.body));
      s.worker({ reset_password: reset.run, stop: stop.run });
      await until(() => reset.state.done && stop.state.done, 'both tasks to finish their work');

      const holder = new pg.Client(t.ctx.config.databaseUrl);
      const prober = new pg.Client(t.ctx.config.databaseUrl);
      await holder.connect();
      await prober.connect();
      let smallFree: boolean | undefined;
      try {
        await holder.query('begin');
        await holder.query('select 1 from services where id = $1 for update', [large]);
        // Both end in one turn, the larger id's job first.
        reset.state.open();
        stop.state.open();
        await until(async () => (await lockWaiters(prober)) >= 1, 'the jobs’ ends to wait for the held row');
        smallFree = await rowFree(prober, 'services', small);
      } finally {
        await holder.query('commit').catch(() => {});
        await holder.end();
        await prober.end();
      }
      assert.equal(smallFree, false, 'the ends had not locked the smaller id’s service before waiting');

      await waitForStatus(t, token, small, 'stopped');
      await waitForStatus(t, token, large, 'running');
      const last = async (id: string) => (await call(t, token, 'GET', `service/${id}/jobs`)).body.data[0];
      assert.deepEqual(
        [await last(large), await last(small)].map((j) => [j.action, j.status, j.result]),
        [
          ['reset_password', 'succeeded', { password_applies: 'now' }],
          ['stop', 'succeeded', null],
        ],
      );
    }));
});
