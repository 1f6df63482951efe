/**
 * A failed service says why: its status and details carry `error` ({code, message}) while it is
 * failed, from the reconciler (`vm_missing`: the server was removed outside the API) or from its
 * create job that failed for good (`create_failed`, the job's error); the `service.status_changed`
 * event to `failed` carries the same; a service that leaves `failed` has none.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { createReconciler } from '../../src/jobs/reconciler.ts';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

/** The reconciler off (VRP_RECONCILE_INTERVAL=0): the tests call its pass themselves. */
const OFF = { VRP_RECONCILE_INTERVAL: '0' };
const B = { 'x-envelope-variant': 'B' };
const A = { 'x-envelope-variant': 'A' };
const VM_MISSING = {
  code: 'vm_missing',
  message: 'The server no longer exists on its host: it was removed outside the API',
};

function reconcilerPass(t: TestApp) {
  return createReconciler({
    db: t.ctx.store.db,
    driver: t.driver!,
    clock: t.ctx.clock,
    log: t.app.log,
    metrics: t.ctx.metrics.power,
    intervalMs: 0,
  }).pass();
}

/** The service's `error` as status (both methods, both variants) and details show it; they must agree. */
async function errorShown(t: TestApp, token: string, id: string): Promise<unknown> {
  const seen: unknown[] = [];
  for (const method of ['GET', 'POST'] as const) {
    for (const what of ['status', 'details']) {
      const b = await call(t, token, method, `service/${id}/${what}`, method === 'POST' ? {} : undefined, B);
      assert.equal(b.status, 200, JSON.stringify(b.body));
      seen.push(b.body.data.error);
      const a = await call(t, token, method, `service/${id}/${what}`, method === 'POST' ? {} : undefined, A);
      seen.push(JSON.parse(a.body.data).error);
    }
  }
  for (const s of seen) assert.deepEqual(s, seen[0]);
  return seen[0];
}

/** The feed's status changes of `id`. */
async function statusChanges(t: TestApp, token: string, id: string): Promise<any[]> {
  const events = (await call(t, token, 'GET', 'events?limit=1000', undefined, B)).body.data as any[];
  return events
    .filter((e) => e.type === 'service.status_changed' && e.data.service_id === id)
    .map((e) => e.data);
}

for (const store of testStores()) {
  describe(`a failed service says why (${store})`, () => {
    test('a VM removed outside the API: status and details show failed with vm_missing, the event too; provisioning it again clears it', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'vanished.example.com');
        assert.equal(await errorShown(t, token, id), null);
        assert.ok(await outside.vanish(t.ctx.store.db, id));
        await reconcilerPass(t);

        const status = await call(t, token, 'GET', `service/${id}/status`, undefined, B);
        assert.equal(status.body.data.status, 'failed');
        assert.deepEqual(await errorShown(t, token, id), VM_MISSING);
        const ops = await operatorToken(t);
        assert.deepEqual((await opsCall(t, ops, 'GET', `services/${id}`)).body.data.error, VM_MISSING);
        const toFailed = (await statusChanges(t, token, id)).filter((e) => e.to === 'failed');
        assert.deepEqual(toFailed, [
          {
            service_id: id,
            from: 'running',
            to: 'failed',
            job_id: null,
            reason: 'vm_missing',
            message: VM_MISSING.message,
            error: VM_MISSING,
          },
        ]);

        // `create` provisions it again: running, and no reason left.
        assert.equal((await call(t, token, 'POST', `service/${id}/create`, undefined, B)).status, 200);
        await waitForStatus(t, token, id, 'running');
        assert.equal(await errorShown(t, token, id), null);
        // No change but the one to failed carries an error.
        const changes = await statusChanges(t, token, id);
        assert.deepEqual(
          changes.filter((e) => 'error' in e).map((e) => e.to),
          ['failed'],
        );
      } finally {
        await t.close();
      }
    });

    test('a VM found missing when a job starts: failed with vm_missing, kept when that job fails; terminate clears it', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'gone-at-start.example.com');
        assert.ok(await outside.vanish(t.ctx.store.db, id));
        await call(t, token, 'POST', `service/${id}/restart`, undefined, B);
        await waitForStatus(t, token, id, 'failed');
        assert.deepEqual(await errorShown(t, token, id), VM_MISSING);
        const [restart] = (await call(t, token, 'GET', `service/${id}/jobs`, undefined, B)).body.data;
        assert.deepEqual([restart.action, restart.status], ['restart', 'failed']);

        assert.equal((await call(t, token, 'POST', `service/${id}/terminate`, undefined, B)).status, 200);
        await waitForStatus(t, token, id, 'terminated');
        assert.equal(await errorShown(t, token, id), null);
      } finally {
        await t.close();
      }
    });

    test('a create that fails for good: status and details show create_failed with the job’s error, as the event does', async () => {
      // Every hypervisor operation fails at once (the simulated driver's fault injection).
      const t = await createTestApp({ ...OFF, VRP_SIM_FAULTS: 'permanent=1' }, { worker: true, store });
      try {
        const token = await t.token();
        const order = await call(
          t,
          token,
          'POST',
          'service/create-order',
          smallOrder('broken.example.com'),
          B,
        );
        const id = order.body.data[0].service_id as string;
        assert.equal(await errorShown(t, token, id), null, 'pending: nothing failed yet');
        await call(t, token, 'POST', `service/${id}/create`, undefined, B);
        await waitForStatus(t, token, id, 'failed');

        const [job] = (await call(t, token, 'GET', `service/${id}/jobs`, undefined, B)).body.data;
        assert.deepEqual([job.action, job.status], ['create', 'failed']);
        assert.match(job.error, /^Simulated permanent fault: /);
        const expected = { code: 'create_failed', message: job.error };
        assert.deepEqual(await errorShown(t, token, id), expected);
        const toFailed = (await statusChanges(t, token, id)).filter((e) => e.to === 'failed');
        assert.deepEqual(toFailed, [
          { service_id: id, from: 'provisioning', to: 'failed', job_id: job.job_id, error: expected },
        ]);

        // A second create fails too: the reason is that job's now.
        await call(t, token, 'POST', `service/${id}/create`, undefined, B);
        await waitForStatus(t, token, id, (s, d) => s === 'failed' && d.job === null);
        const [second] = (await call(t, token, 'GET', `service/${id}/jobs`, undefined, B)).body.data;
        assert.notEqual(second.job_id, job.job_id);
        assert.deepEqual(await errorShown(t, token, id), { code: 'create_failed', message: second.error });
      } finally {
        await t.close();
      }
    });
  });
}
