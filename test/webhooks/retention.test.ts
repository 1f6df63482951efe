/**
 * Events and webhook deliveries are pruned after VRP_EVENT_RETENTION (default 30 days, at least
 * 7), and the queue's age is measured for the operator.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createPruner } from '../../src/jobs/prune.ts';
import { createMetrics } from '../../src/metrics.ts';
import { recordEvents } from '../../src/store/repos/events.ts';
import { call, createTestApp, waitForStatus } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { until } from '../helpers/job-worker.ts';
import { createManualClock } from '../helpers/manual-clock.ts';
import { testStores } from '../helpers/stores.ts';
import { startReceiver } from '../helpers/webhooks.ts';

const DAY = 86_400_000;
const silent = { info() {}, warn() {}, error() {} };

test('VRP_EVENT_RETENTION: 30 days unless set, never under 7; VRP_WEBHOOK_ALLOW_PRIVATE and VRP_WEBHOOK_CONCURRENCY', () => {
  const base = { VRP_DATA_DIR: '/tmp/vrp-config' };
  const defaults = loadConfig(base);
  assert.equal(defaults.eventRetentionMs, 30 * DAY);
  assert.equal(defaults.webhookAllowPrivate, false);
  assert.equal(defaults.webhookConcurrency, 16);
  assert.equal(loadConfig({ ...base, VRP_EVENT_RETENTION: '7d' }).eventRetentionMs, 7 * DAY);
  assert.equal(loadConfig({ ...base, VRP_EVENT_RETENTION: '2160h' }).eventRetentionMs, 90 * DAY);
  assert.throws(() => loadConfig({ ...base, VRP_EVENT_RETENTION: '6d' }), ConfigError);
  assert.throws(() => loadConfig({ ...base, VRP_EVENT_RETENTION: 'a month' }), /VRP_EVENT_RETENTION/);
  assert.equal(loadConfig({ ...base, VRP_WEBHOOK_ALLOW_PRIVATE: '1' }).webhookAllowPrivate, true);
  assert.throws(
    () => loadConfig({ ...base, VRP_WEBHOOK_ALLOW_PRIVATE: 'maybe' }),
    /VRP_WEBHOOK_ALLOW_PRIVATE/,
  );
  assert.throws(() => loadConfig({ ...base, VRP_WEBHOOK_CONCURRENCY: '0' }), /VRP_WEBHOOK_CONCURRENCY/);
});

for (const store of testStores()) {
  describe(`event retention (${store})`, () => {
    test('events and their deliveries go after the retention period, not before', async () => {
      const receiver = await startReceiver();
      const t = await createTestApp({ VRP_WEBHOOK_ALLOW_PRIVATE: '1' }, { worker: true, store });
      try {
        const token = await t.token();
        assert.equal((await call(t, token, 'POST', 'webhooks', { url: receiver.url })).status, 200);
        const order = await call(
          t,
          token,
          'POST',
          'service/create-order',
          smallOrder('retention.example.com'),
        );
        const id = order.body.data[0].service_id;
        assert.equal((await call(t, token, 'POST', `service/${id}/create`)).status, 200);
        await waitForStatus(t, token, id, 'running');
        await receiver.waitFor(3);
        const events = (await call(t, token, 'GET', 'events')).body.data;
        assert.equal(events.length, 3);
        const db = t.ctx.store.db;
        await until(
          async () =>
            (
              await db
                .selectFrom('webhook_deliveries')
                .where('status', '=', 'succeeded')
                .selectAll()
                .execute()
            ).length === 3,
          'the deliveries recorded',
        );
        const pruneAt = (now: number) =>
          createPruner({
            store: t.ctx.store,
            clock: { now: () => now },
            log: silent,
            retentionMs: 90 * DAY,
            eventRetentionMs: 30 * DAY,
            serviceConsoleMaxMs: 3_600_000,
            auditRetentionMs: 365 * DAY,
            intervalMs: 60_000,
            batch: 2,
          }).run();

        const early = await pruneAt(Date.now() + 29 * DAY);
        assert.equal(early.events, 0);
        assert.equal(early.webhookDeliveries, 0);
        assert.deepEqual((await call(t, token, 'GET', 'events')).body.data, events);

        const late = await pruneAt(Date.now() + 31 * DAY);
        assert.equal(late.events, 3, 'in batches of 2');
        assert.equal(late.webhookDeliveries, 3);
        assert.equal(late.jobs, 0, 'jobs keep their own retention');
        assert.deepEqual((await call(t, token, 'GET', 'events')).body.data, []);
        const cursor = await call(t, token, 'GET', `events?after=${events[0].event_id}`);
        assert.equal(cursor.status, 400, 'a pruned cursor says so');
        assert.match(cursor.body.message, /older than the events kept/);
        assert.deepEqual(await db.selectFrom('webhook_deliveries').selectAll().execute(), []);
        assert.equal((await call(t, token, 'GET', 'webhooks')).body.data.length, 1, 'webhooks stay');
      } finally {
        await t.close();
        await receiver.close();
      }
    });

    test('the queue age gauge: how long the longest-waiting due attempt has waited, 0 when none does', async () => {
      const t = await createTestApp({ VRP_WEBHOOK_ALLOW_PRIVATE: '1' }, { store });
      try {
        const clock = createManualClock();
        const metrics = createMetrics(t.ctx.store, clock);
        const gauge = async () => {
          const text = await metrics.registry.getSingleMetricAsString('vrp_webhook_queue_age_seconds');
          return Number(/^vrp_webhook_queue_age_seconds (\S+)$/m.exec(text)?.[1]);
        };
        assert.equal(await gauge(), 0);
        const token = await t.token();
        assert.equal(
          (await call(t, token, 'POST', 'webhooks', { url: 'http://127.0.0.1:9/hook' })).status,
          200,
        );
        const reseller = (await t.ctx.store.db.selectFrom('resellers').select('id').executeTakeFirstOrThrow())
          .id;
        await t.ctx.store.db.transaction().execute((tx) =>
          recordEvents(
            tx,
            reseller,
            [
              {
                type: 'job.finished',
                data: { job_id: 'j', service_id: 's', action: 'stop', status: 'succeeded', error: null },
              },
            ],
            clock.now(),
          ),
        );
        assert.equal(await gauge(), 0, 'due just now');
        clock.advance(90_000);
        assert.equal(await gauge(), 90);
      } finally {
        await t.close();
      }
    });
  });
}
