import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type BackupStore, BackupStoreError } from '../../../src/drivers/backup-store/store.ts';
import { CANCELLED } from '../../../src/jobs/cancel-job.ts';
import { claimJobs } from '../../../src/jobs/claim.ts';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import { newJobRow } from '../../../src/store/repos/jobs.ts';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { queuedAgainAfterBegin } from '../../helpers/began-job.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const MISSING = '00000000-0000-4000-8000-000000000000';
const B = { 'x-envelope-variant': 'B' };

async function order(t: TestApp, token: string, domain: string): Promise<string> {
  const res = await call(t, token, 'POST', 'service/create-order', smallOrder(domain), B);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data[0].service_id;
}

/** Asks the reseller API for `op` on the service; returns the job id it queued. */
async function ask(t: TestApp, token: string, id: string, op: string): Promise<string> {
  const res = await call(t, token, 'POST', `service/${id}/${op}`, undefined, B);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return String(res.headers['x-job-id']);
}

for (const store of testStores()) {
  describe(`operator API: jobs, queued (${store})`, () => {
    // No worker: jobs stay queued until a test claims one.
    let t: TestApp;
    let ops: string;
    let acme: string;

    before(async () => {
      t = await createTestApp({}, { store });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
    });
    after(() => t.close());

    test('cancelling the only queued job: skipped, the service back to where it was, and it accepts again', async () => {
      const id = await order(t, acme, 'one.example.com');
      const job = await ask(t, acme, id, 'create');
      const res = await opsCall(t, ops, 'POST', `jobs/${job}/cancel`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.job.status, 'skipped');
      assert.equal(res.body.data.job.error, CANCELLED);
      assert.deepEqual(res.body.data.service, {
        service_id: id,
        status: 'pending',
        projected_status: 'pending',
        allowed_actions: ['create', 'terminate'],
        pending_jobs: 0,
      });
      const status = await call(t, acme, 'GET', `service/${id}/status`, undefined, B);
      assert.deepEqual([status.body.data.status, status.body.data.job], ['pending', null]);
      // The reseller sees the job cancelled among its jobs, and may ask again.
      const jobs = await call(t, acme, 'GET', `service/${id}/jobs`, undefined, B);
      assert.equal(jobs.body.data[0].status, 'skipped');
      await ask(t, acme, id, 'create');
    });

    test('cancelling a job in the middle of the queue recomputes the projection from the rest', async () => {
      const id = await order(t, acme, 'queue.example.com');
      const create = await ask(t, acme, id, 'create');
      await ask(t, acme, id, 'stop');
      // Projected: running after create, stopped after stop.
      const cancelCreate = await opsCall(t, ops, 'POST', `jobs/${create}/cancel`);
      // Without the create, the stop would be refused when it runs: projected stays pending.
      assert.equal(cancelCreate.body.data.service.projected_status, 'pending');
      assert.equal(cancelCreate.body.data.service.pending_jobs, 1);
      const again = await call(t, acme, 'POST', `service/${id}/create`, undefined, B);
      assert.equal(again.status, 200);

      const other = await order(t, acme, 'term.example.com');
      const create2 = await ask(t, acme, other, 'create');
      const term = await ask(t, acme, other, 'terminate');
      assert.equal(
        (await opsCall(t, ops, 'POST', `jobs/${term}/cancel`)).body.data.service.projected_status,
        'running',
      );
      const last = await opsCall(t, ops, 'POST', `jobs/${create2}/cancel`);
      assert.equal(last.body.data.service.projected_status, 'pending');
      assert.equal(last.body.data.service.pending_jobs, 0);
    });

    test('a running job cannot be cancelled (409 job_not_queued); the one behind it can', async () => {
      const id = await order(t, acme, 'running.example.com');
      const create = await ask(t, acme, id, 'create');
      const stop = await ask(t, acme, id, 'stop');
      const now = Date.now();
      // A worker takes the create (the oldest waiting job in the store may be another test's: take until ours).
      for (let i = 0; i < 20; i++) {
        const claimed = await claimJobs(t.ctx.store, 'test-worker', 10, now, now + 600_000);
        if (claimed.some((c) => c.id === create) || claimed.length === 0) break;
      }
      const refused = await opsCall(t, ops, 'POST', `jobs/${create}/cancel`);
      assert.equal(refused.status, 409);
      assert.equal(refused.body.error_code, 'job_not_queued');
      assert.match(refused.body.message, /running/);
      // The stop is cancelled; the projection is where the running create leads: running.
      const res = await opsCall(t, ops, 'POST', `jobs/${stop}/cancel`);
      assert.equal(res.status, 200);
      assert.equal(res.body.data.service.projected_status, 'running');
      assert.equal(res.body.data.service.pending_jobs, 1);
      // Cancelled once; not twice.
      const twice = await opsCall(t, ops, 'POST', `jobs/${stop}/cancel`);
      assert.equal(twice.status, 409);
      assert.match(twice.body.message, /finished \(skipped\)/);
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 1000, order: 'oldest' });
      assert.deepEqual(
        entries
          .filter((e) => e.action === 'job.cancel' && [create, stop].includes(e.target?.id ?? ''))
          .map((e) => [e.target?.id, e.outcome]),
        [
          [create, 'job_not_queued'],
          [stop, 'ok'],
          [stop, 'job_not_queued'],
        ],
      );
    });

    test('a job queued again after an attempt that began is not cancellable (list and service details), as its cancel is 409; a plain queued one is', async () => {
      const began = await order(t, acme, 'began.example.com');
      const beganJob = await ask(t, acme, began, 'create');
      await queuedAgainAfterBegin(t.ctx.store.db, beganJob);
      const plain = await order(t, acme, 'plain.example.com');
      const plainJob = await ask(t, acme, plain, 'create');
      const views = async (id: string) => {
        const list = await opsCall(t, ops, 'GET', `jobs?service_id=${id}`);
        const details = await opsCall(t, ops, 'GET', `services/${id}`);
        assert.equal(details.status, 200, JSON.stringify(details.body));
        const shown = (j: any) => [j.job_id, j.status, j.attempts, j.cancellable];
        return [list.body.data.items.map(shown), details.body.data.jobs.map(shown)];
      };
      assert.deepEqual(await views(began), [
        [[beganJob, 'queued', 1, false]],
        [[beganJob, 'queued', 1, false]],
      ]);
      assert.deepEqual(await views(plain), [
        [[plainJob, 'queued', 0, true]],
        [[plainJob, 'queued', 0, true]],
      ]);
      const refused = await opsCall(t, ops, 'POST', `jobs/${beganJob}/cancel`);
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.equal(refused.body.error_code, 'job_not_queued');
      assert.match(refused.body.message, /has begun \(attempt 1 did not finish\)/);
      assert.equal((await opsCall(t, ops, 'POST', `jobs/${plainJob}/cancel`)).status, 200);
      // Cancelled, it has finished: no longer cancellable either.
      assert.deepEqual(await views(plain), [
        [[plainJob, 'skipped', 0, false]],
        [[plainJob, 'skipped', 0, false]],
      ]);
    });

    test('unknown or malformed job ids are 404 job_not_found; retry of a job that did not fail is 409', async () => {
      for (const path of [`jobs/${MISSING}/cancel`, 'jobs/nope/cancel', `jobs/${MISSING}/retry`]) {
        const res = await opsCall(t, ops, 'POST', path);
        assert.equal(res.status, 404, path);
        assert.equal(res.body.error_code, 'job_not_found');
      }
      const id = await order(t, acme, 'notfailed.example.com');
      const job = await ask(t, acme, id, 'create');
      const res = await opsCall(t, ops, 'POST', `jobs/${job}/retry`);
      assert.equal(res.status, 409);
      assert.equal(res.body.error_code, 'job_not_failed');
    });

    test('the list filters by status and service and pages newest first without repeats', async () => {
      const id = await order(t, acme, 'list.example.com');
      const create = await ask(t, acme, id, 'create');
      const mine = await opsCall(t, ops, 'GET', `jobs?service_id=${id}`);
      assert.deepEqual(
        mine.body.data.items.map((j: any) => [j.job_id, j.action, j.status]),
        [[create, 'create', 'queued']],
      );
      const queued = await opsCall(t, ops, 'GET', 'jobs?status=queued&limit=1000');
      assert.ok(queued.body.data.items.every((j: any) => j.status === 'queued'));
      assert.ok(queued.body.data.items.some((j: any) => j.job_id === create));

      const seen: string[] = [];
      let cursor: string | null = null;
      let extra = 0;
      do {
        const res: any = await opsCall(t, ops, 'GET', `jobs?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(res.status, 200);
        seen.push(...res.body.data.items.map((j: any) => j.job_id));
        cursor = res.body.data.next_cursor;
        if (extra++ < 3) await ask(t, acme, await order(t, acme, `late${extra}.example.com`), 'create');
      } while (cursor);
      assert.equal(new Set(seen).size, seen.length);
      assert.ok(seen.includes(create));
      for (const q of ['status=done', 'limit=0', 'cursor=xyz']) {
        const res = await opsCall(t, ops, 'GET', `jobs?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, q.startsWith('cursor=') ? 'invalid_cursor' : 'validation_failed');
      }
      assert.deepEqual((await opsCall(t, ops, 'GET', 'jobs?service_id=nope')).body.data.items, []);
      assert.equal((await opsCall(t, acme, 'GET', 'jobs')).status, 403);
      assert.equal((await opsCall(t, acme, 'POST', `jobs/${create}/cancel`)).status, 403);
    });
  });

  describe(`operator API: retrying failed jobs (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let acme: string;

    before(async () => {
      t = await createTestApp({}, { store, worker: true });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
    });
    after(() => t.close());

    test('a retry asks again with the failed job’s own action and parameters, through the status machine', async () => {
      const sealed = t.ctx.secretBox.seal('Retry-pass-9');
      const template = smallOrder('x.example.com').template_id;
      const cases = [
        ['suspend', { reason: 'billing' }, 200],
        ['reset_password', { password_enc: sealed }, 200],
        ['migrate', { host_id: null, from_host_id: null, evacuation: false }, 200],
        ['rescue', { username: 'root', password_enc: sealed }, 200],
        ['reinstall', { template_id: template, password_enc: sealed, ssh_keys: [] }, 200],
        // A running service is not in rescue: refused as a new request would be.
        ['unrescue', { expired: true }, 400],
      ] as const;
      for (const [action, params, status] of cases) {
        // A service of its own each: the failed job is the last of its queue, as the queue leaves it.
        const id = await orderRunning(t, acme, `retry-${action.replace('_', '-')}.example.com`);
        const db = t.ctx.store.db;
        const s = await db
          .selectFrom('services')
          .select(['reseller_id', 'job_seq'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        const row = newJobRow({
          id: randomUUID(),
          serviceId: id,
          resellerId: s.reseller_id,
          action,
          params,
          seq: s.job_seq + 1,
          now: Date.now(),
        });
        await db
          .insertInto('jobs')
          .values({ ...row, status: 'failed', error: 'failed before', finished_at: Date.now() })
          .execute();
        await db
          .updateTable('services')
          .set({ job_seq: s.job_seq + 1 })
          .where('id', '=', id)
          .execute();
        const res = await opsCall(t, ops, 'POST', `jobs/${row.id}/retry`);
        assert.equal(res.status, status, `${action}: ${JSON.stringify(res.body)}`);
        if (status === 400) {
          assert.equal(res.body.error_code, 'invalid_state');
          continue;
        }
        assert.equal(res.body.data.job.action, action);
        const queued = await db
          .selectFrom('jobs')
          .select('params')
          .where('id', '=', res.body.data.job.job_id)
          .executeTakeFirstOrThrow();
        const stored = typeof queued.params === 'string' ? JSON.parse(queued.params) : queued.params;
        assert.deepEqual(stored, params, action);
      }
    });

    test('a create that failed on drained hosts is retried once a host is active; the new job runs there', async () => {
      for (const host of ['sim-host-1', 'sim-host-2']) {
        assert.equal((await opsCall(t, ops, 'POST', `hosts/${host}/drain`)).status, 200);
      }
      const id = await order(t, acme, 'retry.example.com');
      const failedJob = await ask(t, acme, id, 'create');
      await waitForStatus(t, acme, id, 'failed');
      const failed = await opsCall(t, ops, 'GET', `jobs?status=failed&service_id=${id}`);
      assert.equal(failed.body.data.items.length, 1);
      assert.match(failed.body.data.items[0].error, /No host has room/);

      await opsCall(t, ops, 'POST', 'hosts/sim-host-2/activate');
      const retried = await opsCall(t, ops, 'POST', `jobs/${failedJob}/retry`);
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      const newJob = retried.body.data.job;
      assert.notEqual(newJob.job_id, failedJob);
      assert.equal(retried.headers['x-job-id'], newJob.job_id);
      assert.equal(newJob.action, 'create');
      await waitForStatus(t, acme, id, 'running');
      const details = await opsCall(t, ops, 'GET', `services/${id}`);
      assert.equal(details.body.data.host.host_id, 'sim-host-2');

      // Retried once already: a second retry names the job the first one queued.
      const again = await opsCall(t, ops, 'POST', `jobs/${failedJob}/retry`);
      assert.equal(again.status, 409);
      assert.equal(again.body.error_code, 'job_already_retried');
      assert.equal(again.body.retry_job_id, newJob.job_id);
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 1000, order: 'oldest' });
      assert.deepEqual(
        entries
          .filter((e) => e.action === 'job.retry' && e.target?.id === failedJob)
          .map((e) => [e.actor.type, e.target?.id, e.outcome]),
        [
          ['operator', failedJob, 'ok'],
          ['operator', failedJob, 'job_already_retried'],
        ],
      );
      await opsCall(t, ops, 'POST', 'hosts/sim-host-1/activate');
    });

    test('a failed backup_create is retried at most once: ten retries at once queue one job, the others and a later one are 409 job_already_retried with its id', async () => {
      const id = await orderRunning(t, acme, 'backup-retry.example.com');
      // The backup store refuses every write for good: the backup fails (and so does its retry).
      const store = t.ctx.backupStore as { put: BackupStore['put'] };
      const put = store.put;
      store.put = async () => {
        throw new BackupStoreError('Backup store test: the bucket refuses writes (access denied)', {
          transient: false,
        });
      };
      try {
        const failedJob = await ask(t, acme, id, 'backup/create');
        await waitForStatus(t, acme, id, 'running');
        const jobsOf = async () =>
          (await opsCall(t, ops, 'GET', `jobs?service_id=${id}`)).body.data.items.filter(
            (j: any) => j.action === 'backup_create',
          );
        const [failed] = await jobsOf();
        assert.deepEqual([failed.job_id, failed.status, failed.retry_job_id], [failedJob, 'failed', null]);
        assert.match(failed.error, /the bucket refuses writes/);

        const answers = await Promise.all(
          Array.from({ length: 10 }, () => opsCall(t, ops, 'POST', `jobs/${failedJob}/retry`)),
        );
        const ok = answers.filter((a) => a.status === 200);
        assert.equal(ok.length, 1, JSON.stringify(answers.map((a) => a.body)));
        const retryJob = ok[0]!.body.data.job.job_id;
        for (const refused of answers.filter((a) => a.status !== 200)) {
          assert.equal(refused.status, 409, JSON.stringify(refused.body));
          assert.equal(refused.body.error_code, 'job_already_retried');
          assert.equal(refused.body.retry_job_id, retryJob);
          assert.match(refused.body.message, new RegExp(retryJob));
        }
        await waitForStatus(t, acme, id, 'running');
        // Exactly one new job (and one new backup record): the original and its retry.
        const jobs = await jobsOf();
        assert.deepEqual(jobs.map((j: any) => j.job_id).sort(), [failedJob, retryJob].sort());
        assert.equal(jobs.find((j: any) => j.job_id === failedJob).retry_job_id, retryJob);
        const backups = await call(t, acme, 'GET', `service/${id}/backups`, undefined, B);
        assert.equal(backups.body.data.length, 2, JSON.stringify(backups.body.data));

        // Later, one at a time: still refused, with the same job; the retry itself (failed too)
        // may be retried, once.
        const later = await opsCall(t, ops, 'POST', `jobs/${failedJob}/retry`);
        assert.deepEqual(
          [later.status, later.body.error_code, later.body.retry_job_id],
          [409, 'job_already_retried', retryJob],
        );
        const chained = await opsCall(t, ops, 'POST', `jobs/${retryJob}/retry`);
        assert.equal(chained.status, 200, JSON.stringify(chained.body));
        assert.equal(chained.body.data.job.action, 'backup_create');
        await waitForStatus(t, acme, id, 'running');
        assert.equal((await jobsOf()).length, 3);
      } finally {
        store.put = put;
      }
    });
  });
}
