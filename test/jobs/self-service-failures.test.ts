/**
 * Reinstall and rescue jobs that fail: an attempt that fails past the power-off (the re-run
 * leaves the server running, as it was), and the host of the server not answering until the job's
 * last attempt. The service stays as it was (running, its own system), the job says why, and a
 * later request works once the host answers again.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { DriverError } from '../../src/drivers/driver.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { startBackground } from '../../src/jobs/background.ts';
import { call, createTestApp, orderRunning, waitForStatus } from '../helpers/app.ts';
import { interceptDriver } from '../helpers/driver-calls.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`self-service jobs that fail (${store})`, () => {
    test('a reinstall whose first attempt failed past the power-off: the re-run rebuilds it and it runs, as it did', async () => {
      const t = await createTestApp({ VRP_JOB_RETRY_BASE: '1ms' }, { store });
      const driver = await createDriver(t.ctx.config, t.ctx.store.db);
      let attempts = 0;
      const failingOnce = interceptDriver(driver, {
        async reinstall(vmId, spec) {
          if (++attempts === 1) {
            await driver.powerOff(vmId);
            throw new DriverError('Simulated: the host connection dropped', { transient: true });
          }
          return driver.reinstall(vmId, spec);
        },
      });
      const background = startBackground(t.ctx, failingOnce, t.app.log, { pollMs: 20 });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'rebuilt.example.com');
        const template = (
          await t.ctx.store.db
            .selectFrom('services')
            .select('template_id')
            .where('id', '=', id)
            .executeTakeFirstOrThrow()
        ).template_id;
        const res = await call(t, token, 'POST', `service/${id}/reinstall`, { template_id: template });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        await waitForStatus(t, token, id, 'running');
        const [job] = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
        assert.deepEqual([job.action, job.status, job.attempts], ['reinstall', 'succeeded', 2]);
        assert.equal(attempts, 2);
        assert.equal(
          (await driver.inspect(id))?.power,
          'running',
          'the server runs, as it did before the job',
        );
      } finally {
        await background.stop(1000);
        await driver.close();
        await t.close();
      }
    });

    test('a reinstall or a rescue on a host that does not answer fails; the server is as it was', async () => {
      const t = await createTestApp(
        { VRP_JOB_MAX_ATTEMPTS: '2', VRP_JOB_RETRY_BASE: '1ms' },
        { store, worker: true },
      );
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'unlucky.example.com');
        const db = t.ctx.store.db;
        const before = await db
          .selectFrom('services')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        await outside.hostDown(db, before.host_id!);
        const template = before.template_id;
        for (const [path, body] of [
          ['reinstall', { template_id: template, password: 'Never-applied-1' }],
          ['rescue', undefined],
        ] as const) {
          const res = await call(t, token, 'POST', `service/${id}/${path}`, body);
          assert.equal(res.status, 200, JSON.stringify(res.body));
          await waitForStatus(t, token, id, 'running');
          const jobs = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
          assert.equal(jobs[0].action, path);
          assert.equal(jobs[0].status, 'failed');
          assert.match(jobs[0].error, /does not answer/);
        }
        const after = await db
          .selectFrom('services')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        assert.deepEqual(
          [after.status, after.password_enc, after.rescue_since, after.ips],
          ['running', before.password_enc, null, before.ips],
          'nothing of the failed jobs reached the service',
        );
        await outside.hostUp(db, before.host_id!);
        assert.equal((await call(t, token, 'POST', `service/${id}/rescue`)).status, 200);
        await waitForStatus(t, token, id, 'rescue');
      } finally {
        await t.close();
      }
    });
  });
}
