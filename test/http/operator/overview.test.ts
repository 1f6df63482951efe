import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { createManualClock } from '../../helpers/manual-clock.ts';
import { OPS, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };

for (const store of testStores()) {
  describe(`operator API: overview (${store})`, () => {
    const clock = createManualClock();
    let t: TestApp;
    let ops: string;
    let acme: string;

    before(async () => {
      // One host with room for one small server: the second create fails for want of room.
      t = await createTestApp({ VRP_SIM_HOSTS: 'only-host:1:1:40:20' }, { store, worker: true, clock });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
    });
    after(() => t.close());

    async function order(domain: string, create: boolean): Promise<string> {
      const res = await call(t, acme, 'POST', 'service/create-order', { ...smallOrder(domain), hdd: 20 }, B);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const id = res.body.data[0].service_id as string;
      if (create)
        assert.equal((await call(t, acme, 'POST', `service/${id}/create`, undefined, B)).status, 200);
      return id;
    }

    test('counts services by status, every status present, and jobs failed in the last 24 hours', async () => {
      const empty = await opsCall(t, ops, 'GET', 'overview');
      assert.equal(empty.status, 200);
      assert.ok(Object.values(empty.body.data.services).every((n) => n === 0));
      assert.deepEqual(empty.body.data.jobs, { queued: 0, running: 0, failed_last_24h: 0 });

      const running = await order('one.example.com', true);
      await waitForStatus(t, acme, running, 'running');
      const failed = await order('two.example.com', true);
      await waitForStatus(t, acme, failed, 'failed');
      await order('three.example.com', false);

      const res = await opsCall(t, ops, 'GET', 'overview');
      assert.equal(res.status, 200);
      const { services, jobs } = res.body.data;
      assert.equal(services.running, 1);
      assert.equal(services.failed, 1);
      assert.equal(services.pending, 1);
      assert.equal(services.terminated, 0);
      assert.deepEqual(jobs, { queued: 0, running: 0, failed_last_24h: 1 });

      // A day later the failure is no longer among the last 24 hours'; the failed service still counts.
      clock.advance(24 * 3_600_000 + 1000);
      // Tokens live an hour: new ones, on the server's clock.
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
      const later = (await opsCall(t, ops, 'GET', 'overview')).body.data;
      assert.equal(later.jobs.failed_last_24h, 0);
      assert.equal(later.services.failed, 1);
    });

    test('needs an operator token: none is 401, an application’s is 403', async () => {
      const none = await t.app.inject({ method: 'GET', url: `${OPS}/overview` });
      assert.equal(none.statusCode, 401);
      assert.equal(none.json().error_code, 'invalid_token');
      const app = await opsCall(t, acme, 'GET', 'overview');
      assert.equal(app.status, 403);
      assert.equal(app.body.error_code, 'insufficient_scope');
    });
  });
}
