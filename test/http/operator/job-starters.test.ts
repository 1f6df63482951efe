import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { queueMigrationIn } from '../../../src/jobs/migration-queue.ts';
import { inSeqTransaction } from '../../../src/jobs/queue.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { createTestOperator, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };

for (const store of testStores()) {
  describe(`operator API: who started each job (${store})`, () => {
    let t: TestApp;

    before(async () => {
      t = await createTestApp({}, { store, worker: true });
    });
    after(() => t.close());

    test('a job names the application, the operator or the part of the system that asked for it', async () => {
      const operator = await createTestOperator(t, { name: 'olga' });
      const ops = await operatorToken(t, operator);
      const acme = await t.token({ reseller: 'acme' });
      const order = await call(t, acme, 'POST', 'service/create-order', smallOrder('starter.example.com'), B);
      const id: string = order.body.data[0].service_id;
      assert.equal((await call(t, acme, 'POST', `service/${id}/create`, undefined, B)).status, 200);
      await waitForStatus(t, acme, id, 'running');
      assert.equal((await opsCall(t, ops, 'POST', `services/${id}/stop`)).status, 200);
      await waitForStatus(t, acme, id, 'stopped');
      // An evacuation's move, queued as the evacuator queues it.
      await inSeqTransaction(t.ctx.store.db, (tx) => queueMigrationIn(tx, id, Date.now()));

      const jobs = (await opsCall(t, ops, 'GET', `services/${id}`)).body.data.jobs;
      const byAction = new Map(jobs.map((j: any) => [j.action, j.started_by]));
      const create: any = byAction.get('create');
      assert.equal(create.type, 'application');
      assert.match(create.name, /^acme \/ /);
      const stopBy: any = byAction.get('stop');
      assert.deepEqual({ ...stopBy, id: undefined }, { type: 'operator', id: undefined, name: 'olga' });
      assert.match(stopBy.id, /^[0-9a-f-]{36}$/);
      assert.deepEqual(byAction.get('migrate'), { type: 'system', id: 'evacuation', name: 'evacuation' });

      // The jobs list says the same.
      const listed = (await opsCall(t, ops, 'GET', 'jobs?limit=1000')).body.data.items;
      const stop = listed.find((j: any) => j.service_id === id && j.action === 'stop');
      assert.deepEqual(stop.started_by, stopBy);
    });
  });
}
