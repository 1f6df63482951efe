import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPruner } from '../../src/jobs/prune.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { waitUntil } from '../helpers/budget.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { mockSetTimeout } from '../helpers/mock-timeout.ts';
import { testStores } from '../helpers/stores.ts';

const silent = { info() {}, warn() {}, error() {} };
const DAY = 86_400_000;

async function order(t: TestApp, token: string, key?: string): Promise<string> {
  const res = await call(
    t,
    token,
    'POST',
    'service/create-order',
    smallOrder('prune.example.com'),
    key ? { 'idempotency-key': key } : {},
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data[0].service_id;
}

for (const store of testStores()) {
  describe(`retention pruning (${store})`, () => {
    test('finished jobs, old slots and expired idempotency keys go after their time, in batches; nothing else does', async () => {
      const t = await createTestApp({}, { worker: true, store });
      try {
        const token = await t.token();
        const id = await order(t, token, 'order-prune-1');
        for (const op of ['create', 'stop', 'start', 'restart']) {
          assert.equal((await call(t, token, 'POST', `service/${id}/${op}`)).status, 200);
        }
        await waitForStatus(t, token, id, 'running');
        const jobsBefore = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
        assert.equal(jobsBefore.length, 4);
        // A second service with a queued job that never runs: the worker is stopped first.
        await t.background?.stop(5000);
        const waiting = await order(t, token);
        assert.equal((await call(t, token, 'POST', `service/${waiting}/create`)).status, 200);
        const slot = {
          schedule_id: '66666666-6666-4666-8666-666666666666',
          slot_at: Date.now(),
          service_id: id,
          job_id: null,
          outcome: 'skipped' as const,
          created_at: Date.now(),
        };
        await t.ctx.store.db.insertInto('schedule_slots').values(slot).execute();

        const prunerAt = (now: number) =>
          createPruner({
            store: t.ctx.store,
            clock: { now: () => now },
            log: silent,
            retentionMs: 90 * DAY,
            auditRetentionMs: 365 * DAY,
            eventRetentionMs: 90 * DAY,
            serviceConsoleMaxMs: 3_600_000,
            intervalMs: 60_000,
            batch: 3,
          });

        // 89 days on: jobs and slots are kept; the idempotency key (24 h) is gone.
        const early = await prunerAt(Date.now() + 89 * DAY).run();
        assert.deepEqual(early, {
          jobs: 0,
          scheduleSlots: 0,
          idempotencyKeys: 1,
          events: 0,
          webhookDeliveries: 0,
          consoleSessions: 0,
          serviceConsoleLinks: 0,
          auditEntries: 0,
        });
        assert.equal((await call(t, token, 'GET', `service/${id}/jobs`)).body.data.length, 4);

        // 91 days on: every finished job goes (4, in batches of 3), the queued one stays.
        const late = await prunerAt(Date.now() + 91 * DAY).run();
        // Each job told its start, its end and its outcome: 3 events each.
        assert.deepEqual(late, {
          jobs: 4,
          scheduleSlots: 1,
          idempotencyKeys: 0,
          events: 12,
          webhookDeliveries: 0,
          consoleSessions: 0,
          serviceConsoleLinks: 0,
          auditEntries: 0,
        });
        assert.deepEqual((await call(t, token, 'GET', `service/${id}/jobs`)).body.data, []);
        const queued = (await call(t, token, 'GET', `service/${waiting}/jobs`)).body.data;
        assert.deepEqual(
          queued.map((j: { action: string; status: string }) => [j.action, j.status]),
          [['create', 'queued']],
        );
        // The service itself is untouched and still answers.
        const status = await call(t, token, 'GET', `service/${id}/status`);
        assert.equal(status.body.data.status, 'running');
        // The same key now orders anew (the old one was pruned, not merely expired).
        const again = await order(t, token, 'order-prune-1');
        assert.notEqual(again, id);
      } finally {
        await t.close();
      }
    });

    test('a started pruner runs by itself; a stopped one runs no more', async (tc) => {
      const t = await createTestApp({}, { store });
      // The interval passes only when the test ticks the mocked setTimeout; each pass reads the
      // clock first, so the reads count the passes that started.
      mockSetTimeout(tc);
      let passes = 0;
      try {
        const logged: string[] = [];
        const log = {
          info: (...args: unknown[]) => {
            logged.push(String(args[1]));
          },
          warn: () => {},
          error: () => {},
        };
        // An old idempotency key for the pruner to find.
        await t.ctx.store.db
          .insertInto('idempotency_keys')
          .values({
            reseller_id: 'r',
            key: 'k',
            request_hash: 'h',
            response: '{}',
            created_at: Date.now() - 2 * DAY,
          })
          .execute();
        const pruner = createPruner({
          store: t.ctx.store,
          clock: {
            now: () => {
              passes++;
              return Date.now();
            },
          },
          log,
          retentionMs: DAY,
          auditRetentionMs: DAY,
          eventRetentionMs: 7 * DAY,
          serviceConsoleMaxMs: 3_600_000,
          intervalMs: 10,
        });
        pruner.start();
        await waitUntil('a pass that logs', () => {
          tc.mock.timers.tick(10);
          return logged.length > 0;
        });
        assert.deepEqual(logged, ['pruned old records']);
        await pruner.stop();
        const started = passes;
        await t.ctx.store.db
          .insertInto('idempotency_keys')
          .values({
            reseller_id: 'r',
            key: 'k2',
            request_hash: 'h',
            response: '{}',
            created_at: Date.now() - 2 * DAY,
          })
          .execute();
        tc.mock.timers.tick(60_000);
        assert.equal(passes, started, 'no pass starts after stop');
        assert.deepEqual(logged, ['pruned old records'], 'no pass after stop');
        const left = await t.ctx.store.db.selectFrom('idempotency_keys').select('key').execute();
        assert.deepEqual(
          left.map((r) => r.key),
          ['k2'],
        );
      } finally {
        tc.mock.timers.reset();
        await t.close();
      }
    });
  });
}
