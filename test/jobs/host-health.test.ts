/**
 * Host health: a host that does not answer for VRP_HOST_DOWN_AFTER becomes unreachable (audited,
 * in /metrics); its services' jobs wait in the queue without using up attempts, and run once it
 * answers again. Time is the test's clock: no wall-clock windows.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { seedHosts } from '../../src/drivers/hosts.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { createHostHealth } from '../../src/jobs/host-health.ts';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { call, createTestApp, orderRunning, waitForStatus } from '../helpers/app.ts';
import { until, withRunningService } from '../helpers/job-worker.ts';
import { createManualClock } from '../helpers/manual-clock.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`host health (${store})`, () => {
    test('a host down longer than VRP_HOST_DOWN_AFTER is unreachable; its jobs wait and run once it answers', async () => {
      const clock = createManualClock();
      const t = await createTestApp({ VRP_HOST_DOWN_AFTER: '60s' }, { worker: true, store, clock });
      try {
        const db = t.ctx.store.db;
        const health = t.background?.hostHealth;
        assert.ok(health);
        const token = await t.token();
        const id = await orderRunning(t, token, 'health.example.com');
        assert.equal((await call(t, token, 'POST', `service/${id}/stop`)).status, 200);
        await waitForStatus(t, token, id, 'stopped');
        const { host_id: hostId } = await db
          .selectFrom('services')
          .select('host_id')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        assert.ok(hostId);
        const host = () =>
          db.selectFrom('hypervisor_hosts').selectAll().where('id', '=', hostId).executeTakeFirstOrThrow();

        await outside.hostDown(db, hostId);
        await health.pass();
        const failing = await host();
        assert.equal(failing.health, 'up', 'not yet: it has failed for less than VRP_HOST_DOWN_AFTER');
        assert.equal(failing.failing_since, clock.now());
        clock.advance(59_999);
        await health.pass();
        assert.equal((await host()).health, 'up');
        clock.advance(1);
        await health.pass();
        await health.pass();
        const down = await host();
        assert.equal(down.health, 'unreachable');
        assert.equal(down.checked_at, clock.now());
        const entries = async (action: string) =>
          db
            .selectFrom('audit_log')
            .selectAll()
            .where('action', '=', action)
            .where('target_id', '=', hostId)
            .execute();
        assert.equal((await entries('host.unreachable')).length, 1, 'recorded once');
        const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
        assert.match(metrics, new RegExp(`^vrp_host_up\\{host="${down.name}"\\} 0$`, 'm'));

        // A start for its service waits in the queue, its attempt given back each time it looks.
        assert.equal((await call(t, token, 'POST', `service/${id}/start`)).status, 200);
        const startJob = () =>
          db
            .selectFrom('jobs')
            .selectAll()
            .where('service_id', '=', id)
            .where('action', '=', 'start')
            .executeTakeFirstOrThrow();
        await until(async () => /Waiting for host/.test((await startJob()).error ?? ''), 'the start to wait');
        const waiting = await startJob();
        assert.equal(waiting.status, 'queued');
        assert.equal(waiting.attempts, 0, 'no attempt used');
        assert.equal(waiting.run_at, clock.now() + t.ctx.config.hostCheckIntervalMs);

        await outside.hostUp(db, hostId);
        await health.pass();
        const up = await host();
        assert.equal(up.health, 'up');
        assert.equal(up.failing_since, null);
        assert.equal((await entries('host.reachable')).length, 1);
        await waitForStatus(t, token, id, 'running');
        const done = await startJob();
        assert.equal(done.status, 'succeeded');
        assert.equal(done.attempts, 1);
        const after = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
        assert.match(after, new RegExp(`^vrp_host_up\\{host="${down.name}"\\} 1$`, 'm'));
      } finally {
        await t.close();
      }
    });

    test('a job whose driver call fails while its host is unreachable is put back without using an attempt', () =>
      withRunningService(store, async (s) => {
        const db = s.t.ctx.store.db;
        let calls = 0;
        const restart: Task<'restart'> = async (tc) => {
          calls++;
          if (calls > 1) return TASKS.restart(tc);
          // The host stops answering during the call, and host health notices meanwhile.
          await db
            .updateTable('hypervisor_hosts')
            .set({ health: 'unreachable' })
            .where('id', '=', tc.service.hostId ?? '')
            .execute();
          throw new DriverError('Host does not answer', { transient: true });
        };
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
        s.worker({ restart }, { maxAttempts: 1 });
        await until(
          async () => /Waiting for host/.test((await s.jobRow('restart')).error ?? ''),
          'the put-back',
        );
        const row = await s.jobRow('restart');
        assert.equal(row.status, 'queued', 'not failed, although it was its last attempt');
        assert.equal(row.attempts, 0);
        await db.updateTable('hypervisor_hosts').set({ health: 'up' }).execute();
        await db.updateTable('jobs').set({ run_at: 0 }).where('id', '=', row.id).execute();
        await until(async () => (await s.jobRow('restart')).status === 'succeeded', 'the restart');
        assert.equal((await s.jobRow('restart')).attempts, 1);
      }));

    test('a host whose probe hangs delays no other host: each pass probes them all at once', async () => {
      const clock = createManualClock();
      const t = await createTestApp({}, { store, clock });
      try {
        const db = t.ctx.store.db;
        await seedHosts(db, 'simulated', t.ctx.config.simulatedHosts, clock.now());
        let release: () => void = () => {};
        const hung = new Promise<void>((r) => {
          release = r;
        });
        const health = createHostHealth({
          db,
          driver: {
            name: 'simulated',
            // sim-host-1 hangs until released; sim-host-2 does not answer at once.
            probe: (hostId) =>
              hostId === 'sim-host-1' ? hung : Promise.reject(new DriverError('down', { transient: true })),
          },
          clock,
          log: { info() {}, warn() {}, error() {} },
          intervalMs: 1000,
          downAfterMs: 60_000,
        });
        const pass = health.pass();
        await until(async () => {
          const h = await db
            .selectFrom('hypervisor_hosts')
            .select('failing_since')
            .where('id', '=', 'sim-host-2')
            .executeTakeFirstOrThrow();
          return h.failing_since === clock.now();
        }, "sim-host-2's failed probe recorded while sim-host-1's still hangs");
        release();
        await pass;
      } finally {
        await t.close();
      }
    });
  });
}
