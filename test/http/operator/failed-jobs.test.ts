/**
 * The failed-jobs list: each job with its service's domain and its reseller's name, failures
 * already retried left out unless asked for.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { JobAction } from '../../../src/domain/status-machine.ts';
import { newJobRow } from '../../../src/store/repos/jobs.ts';
import type { JobStatus } from '../../../src/store/schema.ts';
import { call, createTestApp, type TestApp } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };

for (const store of testStores()) {
  describe(`operator API: the failed-jobs list (${store})`, () => {
    // No worker: the jobs are written as a worker would have left them.
    let t: TestApp;
    let ops: string;
    const jobs: Record<string, string> = {};

    async function order(token: string, domain: string): Promise<string> {
      const res = await call(t, token, 'POST', 'service/create-order', smallOrder(domain), B);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data[0].service_id;
    }

    /** A job of the service, next in its sequence, as it ended. */
    async function job(
      serviceId: string,
      action: JobAction,
      status: JobStatus,
      name: string,
    ): Promise<string> {
      const db = t.ctx.store.db;
      const s = await db
        .selectFrom('services')
        .select(['reseller_id', 'job_seq'])
        .where('id', '=', serviceId)
        .executeTakeFirstOrThrow();
      const row = newJobRow({
        id: randomUUID(),
        serviceId,
        resellerId: s.reseller_id,
        action,
        params: {},
        seq: s.job_seq + 1,
        now: Date.now(),
      });
      await db
        .insertInto('jobs')
        .values({
          ...row,
          status,
          error: status === 'failed' ? `${name} failed` : null,
          finished_at: Date.now(),
        })
        .execute();
      await db
        .updateTable('services')
        .set({ job_seq: s.job_seq + 1 })
        .where('id', '=', serviceId)
        .execute();
      jobs[name] = row.id;
      return row.id;
    }

    before(async () => {
      t = await createTestApp({}, { store });
      ops = await operatorToken(t);
      const acme = await t.token({ reseller: 'acme' });
      const beta = await t.token({ reseller: 'beta' });
      const one = await order(acme, 'one.example.com');
      const two = await order(beta, 'two.example.com');
      const three = await order(beta, 'three.example.com');
      // Retried by an operator: the retry's job is recorded on the failed one.
      const retried = await job(one, 'stop', 'failed', 'retried');
      const retry = await job(one, 'stop', 'queued', 'retry');
      await t.ctx.store.db
        .updateTable('jobs')
        .set({ retry_job_id: retry })
        .where('id', '=', retried)
        .execute();
      // Done since: a later job of the same action succeeded.
      await job(two, 'restart', 'failed', 'done-since');
      await job(two, 'restart', 'succeeded', 'later-success');
      // Still open: what came later is another action, or failed too.
      await job(three, 'restart', 'failed', 'open');
      await job(three, 'stop', 'succeeded', 'other-action');
      await job(two, 'start', 'failed', 'open-too');
      await job(two, 'start', 'failed', 'failed-again');
    });
    after(() => t.close());

    const names = (items: { job_id: string }[]) =>
      items.map((i) => Object.keys(jobs).find((k) => jobs[k] === i.job_id)).sort();

    test('failures already retried are hidden; each row names its domain and reseller', async () => {
      const res = await opsCall(t, ops, 'GET', 'jobs?status=failed');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(names(res.body.data.items), ['failed-again', 'open', 'open-too']);
      const open = res.body.data.items.find((j: any) => j.job_id === jobs.open);
      assert.deepEqual([open.domain, open.reseller_name], ['three.example.com', 'beta']);
    });

    test('include_retried=true shows them too, with their retry; paging keeps the filter', async () => {
      const res = await opsCall(t, ops, 'GET', 'jobs?status=failed&include_retried=true');
      assert.deepEqual(names(res.body.data.items), [
        'done-since',
        'failed-again',
        'open',
        'open-too',
        'retried',
      ]);
      const retried = res.body.data.items.find((j: any) => j.job_id === jobs.retried);
      assert.deepEqual(
        [retried.domain, retried.reseller_name, retried.retry_job_id],
        ['one.example.com', 'acme', jobs.retry],
      );
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = await opsCall(
          t,
          ops,
          'GET',
          `jobs?status=failed&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        );
        seen.push(...page.body.data.items.map((j: any) => j.job_id));
        cursor = page.body.data.next_cursor;
      } while (cursor);
      assert.deepEqual(names(seen.map((job_id) => ({ job_id }))), ['failed-again', 'open', 'open-too']);
    });

    test('include_retried without status=failed, or not a boolean, is 400 validation_failed', async () => {
      for (const q of [
        'include_retried=true',
        'status=queued&include_retried=false',
        'status=failed&include_retried=yes',
      ]) {
        const res = await opsCall(t, ops, 'GET', `jobs?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, 'validation_failed', q);
      }
      // The other lists are as they were: every job of the status, with names.
      const all = await opsCall(t, ops, 'GET', 'jobs');
      assert.equal(all.body.data.items.length, Object.keys(jobs).length);
      assert.ok(all.body.data.items.every((j: any) => j.domain.endsWith('.example.com') && j.reseller_name));
    });
  });
}
