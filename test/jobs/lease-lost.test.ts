/**
 * A worker whose job was taken from it (its lease ran out and recovery queued the job again, or
 * another worker claimed it) writes nothing more of that job: not its step marker, not its end,
 * not the service's state, not an event. The job's owner now is the one that finishes it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { call } from '../helpers/app.ts';
import { until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`a job lost to another worker (${store})`, () => {
    for (const when of ['before its step marker', 'before its end'] as const) {
      test(`the worker that lost it writes nothing more of it (${when})`, () =>
        withRunningService(store, async (s) => {
          const db = s.t.ctx.store.db;
          let open!: () => void;
          const gate = new Promise<void>((r) => {
            open = r;
          });
          let started = false;
          let markerRefused: unknown;
          const restart: Task<'restart'> = async (tc) => {
            started = true;
            await gate;
            if (when === 'before its step marker') {
              try {
                await tc.stepMarker.record('halfway');
              } catch (err) {
                markerRefused = err;
                throw err;
              }
            }
            return TASKS.restart(tc);
          };
          assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
          const w = s.worker({ restart });
          await until(() => started, 'the restart to start');
          const job = await s.jobRow('restart');
          assert.equal(job.status, 'running');
          // Another worker owns the job now, as after a recovery and a new claim, with a lease
          // of its own (so this worker's recovery leaves it alone).
          await db
            .updateTable('jobs')
            .set({ locked_by: 'another-worker', locked_until: Date.now() + 600_000 })
            .where('id', '=', job.id)
            .execute();
          open();
          await until(() => w.running === 0, 'the old owner to be done with the job');

          const after = await db
            .selectFrom('jobs')
            .selectAll()
            .where('id', '=', job.id)
            .executeTakeFirstOrThrow();
          assert.equal(after.status, 'running', 'still running, for its new owner');
          assert.equal(after.locked_by, 'another-worker');
          assert.equal(after.finished_at, null);
          assert.equal(after.step_marker, null, 'no step marker from the old owner');
          const service = await db
            .selectFrom('services')
            .select(['status', 'active_job_id'])
            .where('id', '=', s.id)
            .executeTakeFirstOrThrow();
          assert.equal(service.status, 'restarting', 'the service as the job left it at its start');
          assert.equal(service.active_job_id, job.id);
          const finished = await db
            .selectFrom('events')
            .select('data')
            .where('type', '=', 'job.finished')
            .execute();
          assert.ok(
            finished.every((e) => JSON.parse(e.data).job_id !== job.id),
            'no job.finished from the old owner',
          );
          if (when === 'before its step marker') assert.ok(markerRefused, 'recording the marker was refused');
        }));
    }
  });
}
