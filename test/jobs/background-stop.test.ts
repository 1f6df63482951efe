/**
 * A process that stops (SIGTERM) stops its worker and webhook sender at once, beside its periodic
 * tasks: a pass under way (here a host probe that does not answer, as a host that is down makes
 * it wait out its timeout) does not keep the worker taking jobs, nor push its grace period back.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HypervisorDriver } from '../../src/drivers/driver.ts';
import { startBackground } from '../../src/jobs/background.ts';
import { call, createTestApp, orderRunning } from '../helpers/app.ts';
import { interceptDriver } from '../helpers/driver-calls.ts';
import { silentLog } from '../helpers/silent-log.ts';
import { testStores } from '../helpers/stores.ts';

/** The driver, with its host probes held until `release()`; `probing` settles at the first. */
function heldProbes(driver: HypervisorDriver) {
  const held = Promise.withResolvers<void>();
  const probing = Promise.withResolvers<void>();
  const wrapped = interceptDriver(driver, {
    async probe(hostId) {
      probing.resolve();
      await held.promise;
      return driver.probe(hostId);
    },
  });
  return { driver: wrapped, probing: probing.promise, release: () => held.resolve() };
}

for (const store of testStores()) {
  describe(`a stopping process's background (${store})`, () => {
    test('takes no job once the stop has begun, while a host probe under way is still held', async () => {
      const t = await createTestApp({}, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'stopping.example.com');
        // The app's own background gives way to one whose host probes the test holds.
        await t.background!.stop(2000);
        const held = heldProbes(t.driver!);
        const background = startBackground(t.ctx, held.driver, silentLog, { pollMs: 50 });
        await held.probing;
        const stopping = background.stop(2000);
        // Queued after the stop began (it wakes the worker's claim at once, as any enqueue does).
        assert.equal((await call(t, token, 'POST', `service/${id}/stop`)).status, 200);
        // A request more, while the probe is still held: turns in which a worker still taking
        // jobs would claim it (on the code before this test, it did).
        await call(t, token, 'GET', `service/${id}/status`);
        held.release();
        await stopping;
        const [job] = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
        assert.equal(job.action, 'stop');
        assert.equal(job.status, 'queued', 'no process took the job: its worker had stopped');
        const status = (await call(t, token, 'GET', `service/${id}/status`)).body.data;
        assert.equal(status.status, 'running', 'the server was not stopped');
      } finally {
        await t.close();
      }
    });
  });
}
