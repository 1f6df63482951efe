/**
 * A worker whose job was taken from it (its lease ran out and recovery queued the job again, or
 * another worker claimed it) writes nothing more of that job: not its start, not its step marker,
 * not its end, not the service's state, not an event. The job's owner now is the one that finishes it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import type { Database } from '../../src/store/schema.ts';
import { call } from '../helpers/app.ts';
import { giveToAnotherWorker, until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

/**
 * The same worker claimed the job again (its lease ran out while its process was cut off from
 * the store, recovery queued the job, and the worker's next look took it): the new claim counted
 * an attempt more, and the first run goes on beside the new one.
 */
const claimAgain = (db: Kysely<Database>, jobId: string) =>
  db
    .updateTable('jobs')
    .set((eb) => ({ attempts: eb('attempts', '+', 1), locked_until: Date.now() + 600_000 }))
    .where('id', '=', jobId)
    .execute();

for (const store of testStores()) {
  describe(`a job lost to another worker (${store})`, () => {
    for (const [when, lostTo] of [
      ['before its step marker', 'another worker'],
      ['before its end', 'another worker'],
      ['before its step marker', 'its own worker, claimed again'],
      ['before its end', 'its own worker, claimed again'],
    ] as const) {
      test(`the run that lost it writes nothing more of it (${when}; lost to ${lostTo})`, () =>
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
          if (lostTo === 'another worker') await giveToAnotherWorker(db, job.id);
          else await claimAgain(db, job.id);
          open();
          await until(() => w.running === 0, 'the old owner to be done with the job');

          const after = await db
            .selectFrom('jobs')
            .selectAll()
            .where('id', '=', job.id)
            .executeTakeFirstOrThrow();
          assert.equal(after.status, 'running', 'still running, for its new owner');
          assert.deepEqual(
            [after.locked_by, after.attempts],
            lostTo === 'another worker' ? ['another-worker', 1] : [job.locked_by, 2],
          );
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

    test('the worker that lost it before its start writes nothing of it: no state, no status, no event', () =>
      withRunningService(store, async (s) => {
        const db = s.t.ctx.store.db;
        const driver = s.t.driver!;
        let open!: () => void;
        const gate = new Promise<void>((r) => {
          open = r;
        });
        let inspected = false;
        // The power check at the job's start asks the hypervisor first: held there, after the claim.
        const held = {
          ...driver,
          async inspect(vmId: string) {
            inspected = true;
            await gate;
            return driver.inspect(vmId);
          },
        };
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
        const w = s.worker({}, { driver: held });
        await until(() => inspected, 'the restart to be claimed');
        const job = await s.jobRow('restart');
        await giveToAnotherWorker(db, job.id);
        open();
        await until(() => w.running === 0, 'the old owner to be done with the job');

        const after = await s.jobRow('restart');
        assert.equal(after.status, 'running', 'still running, for its new owner');
        assert.equal(after.locked_by, 'another-worker');
        assert.equal(after.from_state, null, 'no start recorded by the old owner');
        const service = await db
          .selectFrom('services')
          .select(['status'])
          .where('id', '=', s.id)
          .executeTakeFirstOrThrow();
        assert.equal(service.status, 'running', 'not shown restarting by the old owner');
        const told = await db.selectFrom('events').select(['type', 'data']).execute();
        assert.ok(
          told.every((e) => JSON.parse(e.data).job_id !== job.id),
          `no event of the job from the old owner: ${JSON.stringify(told.filter((e) => JSON.parse(e.data).job_id === job.id))}`,
        );
      }));
  });
}
