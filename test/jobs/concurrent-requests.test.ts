/**
 * Requests on one service that arrive together (both stores; on PostgreSQL a plain operation is
 * one read and one statement, without a transaction: src/jobs/queue.ts): each is accepted or
 * refused as if they had come one after the other. Every one that read the job sequence another
 * had moved loses its compare-and-set, reads again and is decided again, so none is lost and no
 * two share a place in the service's queue; the queue's bound holds; each accepted request has
 * its job and its audit entry, a refused one neither.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call } from '../helpers/app.ts';
import { withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`requests on one service that arrive together (${store})`, () => {
    test('twelve restarts at once: ten are queued in turn, the two over the bound refused, each accepted one audited', () =>
      withRunningService(store, async (s) => {
        const db = s.t.ctx.store.db;
        // No worker runs: the jobs stay queued, so the bound of ten waiting jobs is reached.
        const answers = await Promise.all(
          Array.from({ length: 12 }, () => call(s.t, s.token, 'POST', `service/${s.id}/restart`)),
        );
        const accepted = answers.filter((a) => a.status === 200);
        const refused = answers.filter((a) => a.status !== 200);
        assert.equal(accepted.length, 10, JSON.stringify(refused.map((r) => r.body)));
        for (const r of refused) {
          assert.equal(r.status, 400);
          assert.equal(r.body.error_code, 'service_busy');
        }
        const ids = accepted.map((a) => a.headers['x-job-id'] as string);
        assert.equal(new Set(ids).size, 10);

        const jobs = await db
          .selectFrom('jobs')
          .select(['id', 'seq', 'status', 'action'])
          .where('service_id', '=', s.id)
          .where('action', '=', 'restart')
          .orderBy('seq')
          .execute();
        assert.deepEqual(jobs.map((j) => j.id).sort(), [...ids].sort(), 'a job for each accepted request');
        assert.ok(jobs.every((j) => j.status === 'queued'));
        const seqs = jobs.map((j) => Number(j.seq));
        assert.equal(new Set(seqs).size, 10, 'no two in one place of the queue');
        assert.deepEqual(
          seqs,
          Array.from({ length: 10 }, (_, i) => seqs[0]! + i),
          'one after the other',
        );

        const service = await db
          .selectFrom('services')
          .select(['status', 'pending_jobs', 'projected_status', 'job_seq'])
          .where('id', '=', s.id)
          .executeTakeFirstOrThrow();
        assert.deepEqual(
          { ...service, job_seq: Number(service.job_seq) },
          { status: 'running', pending_jobs: 10, projected_status: 'running', job_seq: seqs.at(-1) },
        );
        const audited = await db
          .selectFrom('audit_log')
          .select(['target_id', 'outcome'])
          .where('service_id', '=', s.id)
          .where('action', '=', 'service.restart')
          .execute();
        assert.equal(
          audited.filter((a) => a.outcome === 'ok').length,
          10,
          'an audit entry for each accepted one',
        );
      }));

    test('a stop and a start at once: decided one after the other, whichever comes first', () =>
      withRunningService(store, async (s) => {
        const [stop, start] = await Promise.all([
          call(s.t, s.token, 'POST', `service/${s.id}/stop`),
          call(s.t, s.token, 'POST', `service/${s.id}/start`),
        ]);
        assert.equal(stop?.status, 200, JSON.stringify(stop?.body));
        assert.equal(start?.status, 200, JSON.stringify(start?.body));
        const jobs = await s.t.ctx.store.db
          .selectFrom('jobs')
          .select(['action'])
          .where('service_id', '=', s.id)
          .where('action', '!=', 'create')
          .orderBy('seq')
          .execute();
        const service = await s.t.ctx.store.db
          .selectFrom('services')
          .select(['pending_jobs', 'projected_status'])
          .where('id', '=', s.id)
          .executeTakeFirstOrThrow();
        // A start decided first finds the server running: accepted with nothing to do, no job.
        // Decided after the stop, it is queued behind it. Either way the projection is its result.
        const actions = jobs.map((j) => j.action);
        if (actions.length === 1) {
          assert.deepEqual(actions, ['stop']);
          assert.deepEqual({ ...service }, { pending_jobs: 1, projected_status: 'stopped' });
        } else {
          assert.deepEqual(actions, ['stop', 'start']);
          assert.deepEqual({ ...service }, { pending_jobs: 2, projected_status: 'running' });
        }
      }));
  });
}
