/**
 * A fleet run by an operator through the operator API alone, as the provider's people would:
 * hosts added at run time, a service migrated to one of them, a host evacuated and removed; the
 * reseller's view stays the same throughout (status, addresses). Both stores.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { waitUntil } from '../helpers/budget.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`a fleet run through the operator API (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let reseller: string;
    before(async () => {
      t = await createTestApp(
        { VRP_SIM_HOSTS: 'seed-1:16:32:1000:100', VRP_EVACUATE_CONCURRENCY: '2' },
        { store, worker: true },
      );
      ops = await operatorToken(t);
      reseller = await t.token();
    });
    after(() => t.close());

    const host = async (id: string) => (await opsCall(t, ops, 'GET', `hosts/${id}`)).body.data;
    const hostOf = async (serviceId: string) =>
      (await opsCall(t, ops, 'GET', `services/${serviceId}`)).body.data.host?.host_id;
    const order = (domain: string) => orderRunning(t, reseller, domain);

    test('add hosts, migrate one service there, evacuate the seeded host, remove it', async () => {
      const ids = [await order('fleet-a.example.com'), await order('fleet-b.example.com')];
      await order('fleet-c.example.com');
      const seeded = await host('seed-1');
      assert.equal(seeded.services, 3);
      const addresses = await Promise.all(
        ids.map(async (id) => (await call(t, reseller, 'GET', `service/${id}/details`)).body.data.ip),
      );

      const add = async (name: string) => {
        const res = await opsCall(t, ops, 'POST', 'hosts', {
          name,
          driver: 'simulated',
          cpu: 8,
          ram_gb: 16,
          disk_gb: 500,
        });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body.data;
      };
      const [h1, h2] = [await add('added-1'), await add('added-2')];
      assert.deepEqual([h1.state, h1.health, h1.services], ['active', 'up', 0]);

      const busy = await opsCall(t, ops, 'POST', 'hosts/seed-1/delete');
      assert.equal(busy.status, 409);
      assert.equal(busy.body.error_code, 'host_not_empty');

      // One service to a host the operator names.
      const [first = '', second = ''] = ids;
      const moved = await opsCall(t, ops, 'POST', `services/${first}/migrate`, { host_id: h1.host_id });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      assert.equal(moved.body.data.job.action, 'migrate');
      await waitUntil('the service to be on added-1', async () => (await hostOf(first)) === h1.host_id);
      const status = await waitForStatus(t, reseller, first, 'running');
      assert.ok(
        !status.allowed_actions.includes('migrate'),
        "a reseller is never offered the operator's migrate",
      );
      assert.equal((await host(h1.host_id)).used.cpu, 1, 'its room moved to added-1');
      assert.equal((await host('seed-1')).used.cpu, 2, 'and was given back on seed-1');
      const jobs = (await call(t, reseller, 'GET', `service/${first}/jobs`)).body.data;
      assert.ok(JSON.stringify(jobs).includes('"migrate"'), "the service's jobs list shows the migration");

      // The seeded host emptied by an evacuation, two moves at most at a time.
      const evac = await opsCall(t, ops, 'POST', 'hosts/seed-1/evacuate');
      assert.equal(evac.status, 200);
      assert.equal(evac.body.data.state, 'evacuating');
      await waitUntil('the evacuation to end', async () => (await host('seed-1')).state === 'draining');
      const done = await host('seed-1');
      assert.equal(done.services, 0);
      assert.deepEqual(
        {
          done: done.evacuation.done,
          failed: done.evacuation.failed,
          running: done.evacuation.running,
          left: done.evacuation.left,
        },
        { done: 2, failed: 0, running: 0, left: 0 },
      );
      assert.equal((await host(h1.host_id)).services + (await host(h2.host_id)).services, 3);
      const audit = (await opsCall(t, ops, 'GET', 'audit?limit=1000')).body.data.items.map(
        (e: { action: string }) => e.action,
      );
      for (const action of ['host.create', 'service.migrate', 'host.evacuate', 'host.evacuated'])
        assert.ok(audit.includes(action), `the audit log has ${action}`);

      // The reseller saw none of it: running, same addresses.
      for (const [i, id] of ids.entries()) {
        await waitForStatus(t, reseller, id, 'running');
        assert.equal((await call(t, reseller, 'GET', `service/${id}/details`)).body.data.ip, addresses[i]);
      }
      assert.notEqual(await hostOf(second), 'seed-1');

      const removed = await opsCall(t, ops, 'POST', 'hosts/seed-1/delete');
      assert.equal(removed.status, 200, JSON.stringify(removed.body));
      assert.equal((await opsCall(t, ops, 'GET', 'hosts/seed-1')).body.error_code, 'host_not_found');
    });
  });
}
