/**
 * docs/design/contract.md#events-and-webhooks, the push side: events POSTed to each webhook, signed
 * per Standard Webhooks (verified here with the `standardwebhooks` package, as a reseller would),
 * at least once, retried on the schedule from the store's queue, one attempt at a time per webhook
 * so that a dead receiver costs other resellers nothing, and never to an address that is not
 * allowed. Receivers are real HTTP servers on 127.0.0.1; no traffic leaves the machine.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Clock } from '../../src/domain/clock.ts';
import { RETRY_DELAYS_MS } from '../../src/domain/webhook-retry-schedule.ts';
import { createStore, type Store } from '../../src/store/database.ts';
import { type Delivery, deliveriesOf } from '../../src/store/repos/webhook-deliveries.ts';
import { createDeliverer, type Deliverer, type DelivererOptions } from '../../src/webhooks/deliverer.ts';
import { ENDPOINT_CAP } from '../../src/webhooks/fair-share.ts';
import type { HostLookup } from '../../src/webhooks/lookup.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { WAIT_MS } from '../helpers/budget.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { until } from '../helpers/job-worker.ts';
import { createManualClock } from '../helpers/manual-clock.ts';
import { testStores } from '../helpers/stores.ts';
import {
  type HangingEndpoint,
  type Receiver,
  startHangingEndpoint,
  startReceiver,
  tableLookup,
} from '../helpers/webhooks.ts';

const silent = { info() {}, warn() {}, error() {} };
const ALLOW_PRIVATE = { VRP_WEBHOOK_ALLOW_PRIVATE: '1' };

async function register(t: TestApp, token: string, url: string, events?: string[]) {
  const res = await call(t, token, 'POST', 'webhooks', events ? { url, events } : { url });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data as { webhook_id: string; secret: string };
}

/** Orders a service and provisions it: three events (provisioning, running, the job's end). */
async function provision(t: TestApp, token: string, domain: string): Promise<string> {
  const res = await call(t, token, 'POST', 'service/create-order', smallOrder(domain));
  const id = res.body.data[0].service_id as string;
  assert.equal((await call(t, token, 'POST', `service/${id}/create`)).status, 200);
  await waitForStatus(t, token, id, 'running');
  return id;
}

async function feed(t: TestApp, token: string): Promise<any[]> {
  return (await call(t, token, 'GET', 'events?limit=1000')).body.data;
}

/** Every delivery row, oldest event first. */
async function deliveries(t: TestApp): Promise<Delivery[]> {
  const rows = await t.ctx.store.db
    .selectFrom('webhook_deliveries')
    .select('event_id')
    .orderBy('event_id')
    .execute();
  const out: Delivery[] = [];
  for (const eventId of new Set(rows.map((r) => r.event_id)))
    out.push(...(await deliveriesOf(t.ctx.store.db, eventId)));
  return out;
}

/** A sender of the test's own, on the app's store (the app's own is stopped first so only this one sends). */
function deliverer(
  t: TestApp,
  o: Partial<DelivererOptions> & { clock?: Clock; lookup?: HostLookup } = {},
): Deliverer {
  return createDeliverer({
    store: t.ctx.store,
    clock: t.ctx.clock,
    log: silent,
    secretBox: t.ctx.secretBox,
    lookup: t.ctx.lookup,
    allowPrivate: t.ctx.config.webhookAllowPrivate,
    concurrency: 4,
    ...o,
  });
}

async function withReceivers<T>(n: number, body: (r: Receiver[]) => Promise<T>): Promise<T> {
  const receivers: Receiver[] = [];
  try {
    for (let i = 0; i < n; i++) receivers.push(await startReceiver());
    return await body(receivers);
  } finally {
    for (const r of receivers) await r.close();
  }
}

for (const store of testStores()) {
  describe(`webhook delivery (${store})`, () => {
    test('every event reaches each webhook that wants it, signed so that standardwebhooks verifies it', () =>
      withReceivers(2, async ([all, finished]) => {
        const t = await createTestApp(ALLOW_PRIVATE, { worker: true, store });
        try {
          const token = await t.token();
          const hookAll = await register(t, token, all!.url);
          const hookFinished = await register(t, token, finished!.url, ['job.finished']);
          const id = await provision(t, token, 'push.example.com');
          const events = await feed(t, token);
          assert.equal(events.length, 3);

          const got = await all!.waitFor(3);
          // One at a time per webhook, oldest event first.
          assert.deepEqual(
            got.map((r) => r.headers['webhook-id']),
            events.map((e) => e.event_id),
          );
          for (const [i, r] of got.entries()) {
            const message = r.verified(hookAll.secret);
            const e = events[i];
            assert.deepEqual(message, { type: e.type, timestamp: e.created_at, data: e.data });
            assert.equal(r.headers['content-type'], 'application/json');
            assert.match(String(r.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
            assert.ok(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000) < 60);
            // Another webhook's secret does not verify it.
            assert.throws(() => r.verified(hookFinished.secret), /No matching signature/);
          }
          const [onlyFinished] = await finished!.waitFor(1);
          assert.deepEqual(onlyFinished!.verified(hookFinished.secret).data, {
            job_id: events[2].data.job_id,
            service_id: id,
            action: 'create',
            status: 'succeeded',
            error: null,
          });
          await until(
            async () => (await deliveries(t)).filter((d) => d.status === 'succeeded').length === 4,
            'every delivery recorded',
          );
          for (const d of await deliveries(t)) {
            assert.equal(d.attempts, 1);
            assert.equal(d.lastStatus, 200);
            assert.equal(d.lastError, null);
            assert.ok(d.finishedAt !== null);
          }
          assert.equal(finished!.received.length, 1, 'a webhook gets only the types it asked for');
          const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
          assert.match(metrics, /^vrp_webhook_deliveries_sent_total 4$/m);
        } finally {
          await t.close();
        }
      }));

    test('a failing receiver is retried on the schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), then given up', () =>
      withReceivers(1, async ([receiver]) => {
        const clock = createManualClock();
        const t = await createTestApp(ALLOW_PRIVATE, { worker: true, store, clock });
        try {
          await t.background!.deliverer.stop();
          const token = await t.token();
          const hook = await register(t, token, receiver!.url, ['job.finished']);
          await provision(t, token, 'retry.example.com');
          const [event] = (await feed(t, token)).filter((e) => e.type === 'job.finished');
          receiver!.answer(() => 503);
          const failures: string[] = [];
          const d = deliverer(t, {
            metrics: {
              sent() {},
              failed: (reason, final) => void failures.push(`${reason}${final ? ' final' : ''}`),
            },
          });
          const row = async () => (await deliveriesOf(t.ctx.store.db, event.event_id))[0]!;

          let attempts = 0;
          for (const delay of [...RETRY_DELAYS_MS, undefined]) {
            assert.equal(await d.pass(), 1, `attempt ${attempts + 1} is made`);
            attempts++;
            const r = await row();
            assert.equal(r.attempts, attempts);
            assert.equal(r.lastStatus, 503);
            assert.equal(r.lastError, 'HTTP 503');
            if (delay === undefined) {
              assert.equal(r.status, 'failed', 'given up after the last attempt');
              assert.equal(r.finishedAt, clock.now());
              break;
            }
            assert.equal(r.status, 'pending');
            assert.equal(r.nextAttemptAt, clock.now() + delay);
            // Not a moment early.
            clock.advance(delay - 1);
            assert.equal(await d.pass(), 0);
            clock.advance(1);
          }
          assert.equal(attempts, 8);
          clock.advance(100 * 3_600_000);
          assert.equal(await d.pass(), 0, 'nothing more after giving up');
          const total = RETRY_DELAYS_MS.reduce((a, b) => a + b, 0);
          assert.ok(total >= 24 * 3_600_000, 'retried for at least 24 hours');

          const got = receiver!.received;
          assert.equal(got.length, 8);
          for (const r of got) {
            assert.equal(
              r.headers['webhook-id'],
              event.event_id,
              'the same id every time: receivers deduplicate',
            );
            assert.equal(r.verified(hook.secret).type, 'job.finished');
          }
          assert.deepEqual(failures, [...Array(7).fill('status'), 'status final']);
        } finally {
          await t.close();
        }
      }));

    test('VRP_WEBHOOK_RETRY_SCHEDULE: a failing receiver is retried after the configured waits, then given up', () =>
      withReceivers(1, async ([receiver]) => {
        const clock = createManualClock();
        const env = { ...ALLOW_PRIVATE, VRP_WEBHOOK_RETRY_SCHEDULE: '2s,1m' };
        const t = await createTestApp(env, { worker: true, store, clock });
        try {
          const token = await t.token();
          await register(t, token, receiver!.url, ['job.finished']);
          receiver!.answer(() => 503);
          await provision(t, token, 'short-retry.example.com');
          const [event] = (await feed(t, token)).filter((e) => e.type === 'job.finished');
          const row = async () => (await deliveriesOf(t.ctx.store.db, event.event_id))[0]!;
          // The server's own sender makes the first attempt, and schedules the next per the setting.
          await until(
            async () => (await row()).attempts === 1 && (await row()).lastStatus === 503,
            'attempt 1',
          );
          assert.equal((await row()).nextAttemptAt, clock.now() + 2000);
          await t.background!.deliverer.stop();

          const d = deliverer(t, { retrySchedule: t.ctx.config.webhookRetrySchedule });
          clock.advance(1999);
          assert.equal(await d.pass(), 0, 'not a moment early');
          clock.advance(1);
          assert.equal(await d.pass(), 1, 'attempt 2, 2 s later');
          assert.equal((await row()).nextAttemptAt, clock.now() + 60_000);
          clock.advance(60_000);
          assert.equal(await d.pass(), 1, 'attempt 3, a minute later');
          const last = await row();
          assert.equal(last.status, 'failed', 'given up after the schedule');
          assert.equal(last.attempts, 3);
          clock.advance(24 * 3_600_000);
          assert.equal(await d.pass(), 0);
          assert.equal(receiver!.received.length, 3);
        } finally {
          await t.close();
        }
      }));

    test('a receiver that recovers gets the event on a later attempt; a hanging one times out', () =>
      withReceivers(2, async ([flaky, hanging]) => {
        const clock = createManualClock();
        const t = await createTestApp(ALLOW_PRIVATE, { worker: true, store, clock });
        try {
          await t.background!.deliverer.stop();
          const token = await t.token();
          const hook = await register(t, token, flaky!.url, ['job.finished']);
          await register(t, token, hanging!.url, ['job.finished']);
          await provision(t, token, 'recover.example.com');
          flaky!.answer((n) => (n < 3 ? 500 : 204));
          hanging!.answer(() => 'hang');
          // Long enough that the receiver which answers does so within it even on a loaded
          // machine (the deadline covers every attempt of the pass), short enough to wait for
          // the one that hangs three times.
          const d = deliverer(t, { timeoutMs: 1500 });
          assert.equal(await d.pass(), 2);
          clock.advance(RETRY_DELAYS_MS[0]!);
          assert.equal(await d.pass(), 2);
          clock.advance(RETRY_DELAYS_MS[1]!);
          assert.equal(await d.pass(), 2);
          const rows = await deliveries(t);
          const ok = rows.find((r) => r.webhookId === hook.webhook_id)!;
          assert.equal(ok.status, 'succeeded');
          assert.equal(ok.attempts, 3);
          assert.equal(ok.lastStatus, 204);
          assert.equal(ok.lastError, null);
          const late = rows.find((r) => r.webhookId !== hook.webhook_id)!;
          assert.equal(late.status, 'pending');
          assert.equal(late.attempts, 3);
          assert.equal(late.lastStatus, null);
          assert.match(late.lastError!, /^no answer within 1\.[0-5] s$/);
          assert.equal(late.nextAttemptAt, clock.now() + RETRY_DELAYS_MS[2]!);
          assert.equal(hanging!.received.length, 3);
        } finally {
          await t.close();
        }
      }));

    test("a dead receiver holds one sender: another reseller's deliveries go on", () =>
      withReceivers(2, async ([dead, alive]) => {
        const t = await createTestApp(ALLOW_PRIVATE, { worker: true, store });
        try {
          await t.background!.deliverer.stop();
          const slow = await t.token({ reseller: 'slow-corp' });
          const fast = await t.token({ reseller: 'fast-corp' });
          await register(t, slow, dead!.url);
          await register(t, fast, alive!.url);
          dead!.answer(() => 'hang');
          // The dead receiver's backlog is queued first: 9 events due before the other's 3.
          for (const i of [1, 2, 3]) await provision(t, slow, `slow${i}.example.com`);
          await provision(t, fast, 'fast.example.com');
          // Two senders only, and attempts that wait for an answer longer than the test does: had
          // the dead receiver held both senders, the other receiver would get nothing at all.
          const d = deliverer(t, { concurrency: 2, timeoutMs: 10 * WAIT_MS });
          d.start();
          try {
            const got = await alive!.waitFor(3);
            assert.equal(got.length, 3);
            assert.equal(dead!.received.length, 1, 'one attempt at a time to the dead receiver');
            // The receiver has the third; its answer recorded before the sender stops (an
            // attempt stopped mid-answer goes back to the queue).
            await until(
              async () => (await deliveries(t)).filter((r) => r.status === 'succeeded').length === 3,
              "the other reseller's deliveries recorded",
            );
          } finally {
            await d.stop(0);
          }
          // Stopped mid-attempt: given back to the queue, not counted.
          const pending = (await deliveries(t)).filter((r) => r.status === 'pending');
          assert.equal(pending.length, 9);
          assert.ok(pending.every((r) => r.attempts === 0 && r.lastError === null));
        } finally {
          await t.close();
        }
      }));

    test("thirty hanging webhooks of three resellers: a fourth reseller's deliveries arrive while every hanging attempt is held, and no endpoint gets more than its cap", () =>
      withReceivers(1, async ([fast]) => {
        const hanging: HangingEndpoint[] = [];
        const t = await createTestApp(ALLOW_PRIVATE, { worker: true, store });
        try {
          await t.background!.deliverer.stop();
          for (let i = 0; i < 21; i++) hanging.push(await startHangingEndpoint());
          const [shared, ...own] = hanging as [HangingEndpoint, ...HangingEndpoint[]];
          const ofA = own.slice(0, 10);
          const ofB = own.slice(10);
          const a = await t.token({ reseller: 'hangs-a' });
          const b = await t.token({ reseller: 'hangs-b' });
          const e = await t.token({ reseller: 'hangs-at-one-place' });
          const c = await t.token({ reseller: 'answers-at-once' });
          // A and B: ten webhooks each, at twenty endpoints that never answer; E: ten at one such endpoint.
          for (let i = 0; i < 10; i++) {
            await register(t, a, `${ofA[i]!.origin}/a`);
            await register(t, b, `${ofB[i]!.origin}/b`);
            await register(t, e, `${shared.origin}/e${i}`);
          }
          await register(t, c, fast!.url);
          // Their deliveries are queued first: 3 events for each of the thirty webhooks.
          await provision(t, a, 'hang-a.example.com');
          await provision(t, b, 'hang-b.example.com');
          await provision(t, e, 'hang-e.example.com');
          // The default number of senders (16, fewer than the hanging webhooks), and attempts
          // that wait a minute for an answer.
          const d = deliverer(t, { concurrency: 16, timeoutMs: 60_000 });
          d.start();
          try {
            const held = (endpoints: HangingEndpoint[]) => endpoints.reduce((n, x) => n + x.open, 0);
            await until(
              () => shared.open >= ENDPOINT_CAP && held(ofA) >= 4 && held(ofB) >= 4,
              'the hanging endpoints to hold attempts of all three resellers',
            );

            await provision(t, c, 'fast-c.example.com');
            await fast!.waitFor(3);
            // The fourth reseller did not wait for a hanging attempt to end: none has.
            for (const x of hanging) assert.equal(x.closed, 0, 'no hanging attempt ended');
            assert.ok(held(hanging) >= 10, `${held(hanging)} hanging attempts held`);
            // At most the cap in flight to the one endpoint of E's ten webhooks, and one per webhook.
            assert.equal(shared.maxOpen, ENDPOINT_CAP);
            for (const x of own) assert.ok(x.maxOpen <= 1, 'one attempt at a time per webhook');
            await until(
              async () => (await deliveries(t)).filter((r) => r.status === 'succeeded').length === 3,
              "the fourth reseller's deliveries recorded",
            );
          } finally {
            await d.stop(0);
          }
        } finally {
          await t.close();
          for (const x of hanging) await x.close();
        }
      }));

    test('a host that resolves to a refused address at delivery is never connected to (DNS rebinding)', () =>
      withReceivers(1, async ([local]) => {
        // Public when registered; then the name points at this machine (where a receiver listens), then at 10.x.
        let answer = '93.184.216.34';
        const lookup = tableLookup({ 'hooks.example.com': () => answer });
        const t = await createTestApp({}, { worker: true, store, lookup });
        try {
          await t.background!.deliverer.stop();
          const token = await t.token();
          await register(t, token, `http://hooks.example.com:${local!.port}/hook`, ['job.finished']);
          answer = '127.0.0.1';
          await provision(t, token, 'rebind.example.com');
          const reasons: string[] = [];
          const d = deliverer(t, { metrics: { sent() {}, failed: (reason) => void reasons.push(reason) } });
          assert.equal(await d.pass(), 1);
          let [row] = await deliveries(t);
          assert.equal(row!.status, 'pending');
          assert.equal(row!.lastStatus, null);
          assert.equal(
            row!.lastError,
            'hooks.example.com resolves to 127.0.0.1, a loopback address, which webhooks may not reach',
          );
          answer = '10.20.30.40';
          await t.ctx.store.db.updateTable('webhook_deliveries').set({ next_attempt_at: 0 }).execute();
          assert.equal(await d.pass(), 1);
          [row] = await deliveries(t);
          assert.match(row!.lastError!, /resolves to 10\.20\.30\.40, a private address/);
          // The same table as at registration: a Teredo address is refused as well.
          answer = '2001::5';
          await t.ctx.store.db.updateTable('webhook_deliveries').set({ next_attempt_at: 0 }).execute();
          assert.equal(await d.pass(), 1);
          [row] = await deliveries(t);
          assert.match(row!.lastError!, /resolves to 2001::5, a reserved \(Teredo\) address/);
          assert.deepEqual(reasons, ['refused', 'refused', 'refused']);
          assert.equal(local!.received.length, 0, 'nothing was sent to the refused address');
        } finally {
          await t.close();
        }
      }));

    test('the sender resolves once per attempt and connects to the address it checked', () =>
      withReceivers(1, async ([receiver]) => {
        // The receiver listens on 127.0.0.1 only; a second resolution would lead to 127.0.0.2.
        let calls = 0;
        const lookup = tableLookup({ 'receiver.test': () => (++calls === 1 ? '127.0.0.1' : '127.0.0.2') });
        const t = await createTestApp(ALLOW_PRIVATE, { worker: true, store, lookup });
        try {
          await t.background!.deliverer.stop();
          const token = await t.token();
          const hook = await register(t, token, `http://receiver.test:${receiver!.port}/hook`, [
            'job.finished',
          ]);
          await provision(t, token, 'pinned.example.com');
          assert.equal(await deliverer(t).pass(), 1);
          const [got] = await receiver!.waitFor(1);
          assert.equal(got!.headers.host, `receiver.test:${receiver!.port}`, 'the name stays in Host');
          assert.equal(got!.verified(hook.secret).type, 'job.finished');
          assert.equal(calls, 1);
          assert.equal((await deliveries(t))[0]!.status, 'succeeded');
        } finally {
          await t.close();
        }
      }));

    test('a deleted webhook gets nothing more: its queued deliveries go with it', () =>
      withReceivers(1, async ([receiver]) => {
        const t = await createTestApp(ALLOW_PRIVATE, { worker: true, store });
        try {
          await t.background!.deliverer.stop();
          const token = await t.token();
          const hook = await register(t, token, receiver!.url);
          await provision(t, token, 'deleted.example.com');
          assert.equal((await deliveries(t)).length, 3);
          assert.equal((await call(t, token, 'POST', `webhooks/${hook.webhook_id}/delete`)).status, 200);
          assert.deepEqual(await deliveries(t), []);
          assert.equal(await deliverer(t).pass(), 0);
          assert.equal(receiver!.received.length, 0);
        } finally {
          await t.close();
        }
      }));

    test('an attempt whose process stopped answering is made again by another once its lease is over', () =>
      withReceivers(1, async ([receiver]) => {
        const t = await createTestApp(ALLOW_PRIVATE, { worker: true, store });
        try {
          await t.background!.deliverer.stop();
          const token = await t.token();
          const hook = await register(t, token, receiver!.url, ['job.finished']);
          await provision(t, token, 'lease.example.com');
          receiver!.answer((n) => (n === 1 ? 'hang' : 200));
          // The first sender hangs on its attempt past its lease, as a process that froze would.
          const frozen = deliverer(t, { leaseMs: 200, timeoutMs: 60_000 });
          frozen.start();
          await receiver!.waitFor(1);
          const second = deliverer(t);
          await until(async () => (await second.pass()) === 1, 'the lease to run out');
          const [again] = (await receiver!.waitFor(2)).slice(1);
          assert.equal(again!.headers['webhook-id'], receiver!.received[0]!.headers['webhook-id']);
          assert.equal(again!.verified(hook.secret).type, 'job.finished');
          await frozen.stop(0);
          const [row] = await deliveries(t);
          assert.equal(row!.status, 'succeeded', "the frozen sender's late end changes nothing");
          assert.equal(row!.attempts, 2);
        } finally {
          await t.close();
        }
      }));

    test('two processes on one store make each attempt once', () =>
      withReceivers(1, async ([receiver]) => {
        const t = await createTestApp(ALLOW_PRIVATE, { worker: true, store });
        const other: Store = createStore({ databaseUrl: t.ctx.config.databaseUrl, dataDir: t.dataDir });
        try {
          await t.background!.deliverer.stop();
          const hooks: string[] = [];
          const token = await t.token();
          for (let i = 0; i < 6; i++)
            hooks.push((await register(t, token, `${receiver!.url}/${i}`)).webhook_id);
          for (const i of [1, 2, 3]) await provision(t, token, `twice${i}.example.com`);
          const expected = 6 * 9;
          assert.equal((await deliveries(t)).length, expected);
          const a = deliverer(t, { concurrency: 3 });
          const b = createDeliverer({
            store: other,
            clock: t.ctx.clock,
            log: silent,
            secretBox: t.ctx.secretBox,
            lookup: t.ctx.lookup,
            allowPrivate: true,
            concurrency: 3,
          });
          a.start();
          b.start();
          try {
            await receiver!.waitFor(expected);
            await until(
              async () => (await deliveries(t)).every((d) => d.status === 'succeeded'),
              'every delivery recorded',
            );
          } finally {
            await a.stop();
            await b.stop();
          }
          const sent = receiver!.received.map((r) => `${r.headers['webhook-id']} ${r.url}`);
          const keys = receiver!.received.map((r) => `${r.headers['webhook-id']}`);
          assert.equal(receiver!.received.length, expected, 'no attempt made twice');
          assert.equal(new Set(sent).size, sent.length);
          assert.equal(new Set(keys).size, 9, 'each event to the six webhooks');
          assert.ok((await deliveries(t)).every((d) => d.attempts === 1));
        } finally {
          await other.close();
          await t.close();
        }
      }));
  });
}
