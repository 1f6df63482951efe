/**
 * A job's parameters have one type per action, checked when the job is enqueued (a
 * wrong shape is a programming error, thrown) and when a worker reads it back (a stored job that
 * does not fit its action fails with a readable error instead of running with garbage).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../src/domain/errors.ts';
import { jobParamsProblem } from '../../src/domain/job-params.ts';
import type { JobAction } from '../../src/domain/status-machine.ts';
import { requestOperation } from '../../src/jobs/queue.ts';
import { findService } from '../../src/store/repos/services.ts';
import { call, waitForStatus } from '../helpers/app.ts';
import { until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`job parameters, typed per action (${store})`, () => {
    test('parameters of the wrong shape are refused at enqueue: thrown, and nothing is written', () =>
      withRunningService(store, async (s) => {
        const { db } = s.t.ctx.store;
        const before = await findService(db, s.id);
        const jobsBefore = (await s.jobs()).length;
        // As a caller that bypassed the types would send them (JSON from elsewhere, any-typed).
        const wrong = JSON.parse('{"cpu": "2", "ram": 2, "hdd": 20, "ip": 1, "backup": 0}');
        const enqueue = requestOperation(
          db,
          { resellerId: before!.resellerId, serviceId: s.id, action: 'upgrade', params: wrong },
          Date.now(),
        );
        await assert.rejects(enqueue, (err: Error) => {
          assert.ok(!(err instanceof ApiError), 'a programming error, not an answer to a client');
          assert.match(err.message, /upgrade job do not fit: \/cpu must be integer/);
          return true;
        });
        const missing = requestOperation(
          db,
          {
            resellerId: before!.resellerId,
            serviceId: s.id,
            action: 'backup_delete',
            params: JSON.parse('{}'),
          },
          Date.now(),
        );
        await assert.rejects(missing, /backup_delete job do not fit/);
        const after = await findService(db, s.id);
        assert.equal(after?.jobSeq, before?.jobSeq, 'the transaction rolled back');
        assert.equal(after?.pendingJobs, before?.pendingJobs);
        assert.equal((await s.jobs()).length, jobsBefore);
      }));

    test('a stored job whose parameters do not fit fails with a readable error; the next job runs', () =>
      withRunningService(store, async (s) => {
        const { db } = s.t.ctx.store;
        const upgrade = await call(s.t, s.token, 'POST', `service/${s.id}/upgrade`, {
          CPU: 2,
          RAM: 2,
          HDD: 20,
          IP: 1,
          BACKUP: 10,
        });
        assert.equal(upgrade.status, 200, JSON.stringify(upgrade.body));
        const jobId = upgrade.headers['x-job-id'] as string;
        // Damaged in the store (by hand, or by an older version) before a worker takes it.
        await db
          .updateTable('jobs')
          .set({ params: '{"cpu": "lots", "ram": 2, "hdd": 20, "ip": 1, "backup": 10}' })
          .where('id', '=', jobId)
          .execute();
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/stop`)).status, 200);

        s.worker();
        await waitForStatus(s.t, s.token, s.id, 'stopped');
        const jobs = await s.jobs();
        const damaged = jobs.find((j) => j.job_id === jobId);
        assert.equal(damaged.status, 'failed');
        assert.match(
          damaged.error,
          /^The stored parameters of this upgrade job are invalid: \/cpu must be integer/,
        );
        await until(async () => (await s.jobs()).at(-1).status === 'succeeded', 'the stop after it');
        const service = await findService(db, s.id);
        assert.equal(service?.cpu, 1, 'nothing was resized');
        assert.equal(service?.pendingJobs, 0);
      }));
  });
}

test("a stored job whose action is none of ours is refused, also one named like an object's own member", () => {
  for (const action of ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'bogus'])
    assert.equal(jobParamsProblem(action as JobAction, {}), `${action} is not a job action`);
  // One of ours, checked against its own schema (compiled at this first check).
  assert.equal(jobParamsProblem('create', {}), undefined);
  assert.match(jobParamsProblem('unrescue', {}) ?? '', /must have required property 'expired'/);
});
