/**
 * docs/design/contract.md#events-and-webhooks, the pull side: `GET API/events` answers the
 * reseller's events (`service.status_changed`, `job.finished`), recorded with the changes they
 * tell, oldest first, paged with `after` and `limit`, and never another reseller's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { createScheduler } from '../../src/jobs/scheduler.ts';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { createJobSignal } from '../../src/loop/signal.ts';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function feed(t: TestApp, token: string, query = '', headers: Record<string, string> = {}) {
  return call(t, token, 'GET', `events${query}`, undefined, headers);
}

/** The whole feed, read page by page with `limit`. */
async function allEvents(t: TestApp, token: string, limit: number): Promise<any[]> {
  const events: any[] = [];
  for (;;) {
    const after = events.length > 0 ? `&after=${events.at(-1).event_id}` : '';
    const res = await feed(t, token, `?limit=${limit}${after}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.body.data.length <= limit);
    if (res.body.data.length === 0) return events;
    events.push(...res.body.data);
  }
}

/** What a test compares: the event without its id and time. */
const gist = (e: any) => ({ type: e.type, ...e.data });

for (const store of testStores()) {
  describe(`events feed (${store})`, () => {
    test("a job's events appear in order: status changes as they happen, then the job's end", async () => {
      const t = await createTestApp({}, { worker: true, store });
      try {
        const token = await t.token();
        assert.deepEqual((await feed(t, token)).body.data, [], 'nothing happened yet: nothing to tell');
        const id = await orderRunning(t, token, 'events.example.com');
        assert.equal((await call(t, token, 'POST', `service/${id}/stop`)).status, 200);
        await waitForStatus(t, token, id, 'stopped');
        const jobs = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
        const [stopJob, createJob] = jobs.map((j: { job_id: string }) => j.job_id);

        const res = await feed(t, token);
        assert.equal(res.status, 200);
        assert.equal(res.body.status, 'Success');
        const events = res.body.data;
        assert.deepEqual(events.map(gist), [
          {
            type: 'service.status_changed',
            service_id: id,
            from: 'pending',
            to: 'provisioning',
            job_id: createJob,
          },
          {
            type: 'service.status_changed',
            service_id: id,
            from: 'provisioning',
            to: 'running',
            job_id: createJob,
          },
          {
            type: 'job.finished',
            job_id: createJob,
            service_id: id,
            action: 'create',
            status: 'succeeded',
            error: null,
          },
          {
            type: 'service.status_changed',
            service_id: id,
            from: 'running',
            to: 'stopping',
            job_id: stopJob,
          },
          {
            type: 'service.status_changed',
            service_id: id,
            from: 'stopping',
            to: 'stopped',
            job_id: stopJob,
          },
          {
            type: 'job.finished',
            job_id: stopJob,
            service_id: id,
            action: 'stop',
            status: 'succeeded',
            error: null,
          },
        ]);
        for (const e of events) {
          assert.match(e.event_id, UUID, 'a UUIDv7: time-ordered');
          assert.ok(!Number.isNaN(Date.parse(e.created_at)) && e.created_at.endsWith('Z'));
          assert.deepEqual(Object.keys(e).sort(), ['created_at', 'data', 'event_id', 'type']);
        }
        const ids = events.map((e: { event_id: string }) => e.event_id);
        assert.equal(new Set(ids).size, ids.length, 'unique');
        assert.deepEqual([...ids].sort(), ids, 'ids sort in the order of the feed');
        const times = events.map((e: { created_at: string }) => Date.parse(e.created_at));
        assert.deepEqual(
          [...times].sort((a, b) => a - b),
          times,
        );
      } finally {
        await t.close();
      }
    });

    test('pages with after and limit, in both envelopes; after the last event, an empty list', async () => {
      const t = await createTestApp({}, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'paging.example.com');
        for (const op of ['stop', 'start', 'restart']) {
          assert.equal((await call(t, token, 'POST', `service/${id}/${op}`)).status, 200);
        }
        await waitForStatus(t, token, id, 'running');
        const everything = (await feed(t, token, '?limit=1000')).body.data;
        assert.equal(everything.length, 12, '4 jobs: start, end, outcome each');
        assert.deepEqual(await allEvents(t, token, 5), everything);
        assert.deepEqual(await allEvents(t, token, 1), everything);

        const third = everything[2].event_id;
        const page = await feed(t, token, `?after=${third}&limit=2`);
        assert.deepEqual(page.body.data, everything.slice(3, 5));
        // Ids in any case name the same event.
        const upper = await feed(t, token, `?after=${third.toUpperCase()}&limit=2`);
        assert.deepEqual(upper.body.data, everything.slice(3, 5));
        assert.deepEqual((await feed(t, token, `?after=${everything.at(-1).event_id}`)).body.data, []);
        // Default limit 100: all 12.
        assert.equal((await feed(t, token)).body.data.length, 12);

        const a = await feed(t, token, `?after=${third}&limit=2`, { 'x-envelope-variant': 'A' });
        assert.equal(a.status, 200);
        assert.equal(a.body.success, 'true');
        assert.equal(typeof a.body.data, 'string');
        assert.deepEqual(JSON.parse(a.body.data), everything.slice(3, 5));
        const emptyA = await feed(t, token, `?after=${everything.at(-1).event_id}`, {
          'x-envelope-variant': 'A',
        });
        assert.equal(emptyA.body.data, '[]');
      } finally {
        await t.close();
      }
    });

    test('limit and after are validated: 400 validation_failed, never a 500', async () => {
      const t = await createTestApp({}, { store });
      try {
        const token = await t.token();
        const cases: [string, RegExp][] = [
          ['?limit=0', /limit must be between 1 and 1000/],
          ['?limit=1001', /limit must be between 1 and 1000/],
          ['?limit=99999', /limit/],
          ['?limit=-1', /limit/],
          ['?limit=ten', /limit/],
          ['?limit=', /limit/],
          ['?after=yesterday', /after must be an event_id/],
          ['?after=', /after must be an event_id/],
          [`?after=${'a'.repeat(65)}`, /after/],
          ['?after=0190c7a8-0000-7000-8000-000000000000', /after names no event of yours/],
        ];
        for (const [query, message] of cases) {
          const res = await feed(t, token, query);
          assert.equal(res.status, 400, query);
          assert.equal(res.body.error_code, 'validation_failed', query);
          assert.match(res.body.message, message, query);
        }
        for (const limit of ['1', '1000'])
          assert.equal((await feed(t, token, `?limit=${limit}`)).status, 200);
      } finally {
        await t.close();
      }
    });

    test('tenants: a reseller sees only its own events, and cannot page from another one', async () => {
      const t = await createTestApp({}, { worker: true, store });
      try {
        const mine = await t.token({ reseller: 'acme' });
        const theirs = await t.token({ reseller: 'globex' });
        // A second application of the same reseller sees the same feed.
        const colleague = await t.token({ reseller: 'acme' });
        const id = await orderRunning(t, mine, 'tenant.example.com');
        const events = (await feed(t, mine)).body.data;
        assert.equal(events.length, 3);
        assert.deepEqual((await feed(t, colleague)).body.data, events);
        assert.deepEqual((await feed(t, theirs)).body.data, []);
        const res = await feed(t, theirs, `?after=${events[0].event_id}`);
        assert.equal(res.status, 400);
        assert.equal(res.body.error_code, 'validation_failed');
        assert.ok(events.every((e: any) => e.data.service_id === id));
      } finally {
        await t.close();
      }
    });

    test('needs the service scope (403) and a token (401)', async () => {
      const t = await createTestApp({}, { store });
      try {
        const token = await t.token({ scopes: ['access', 'products'] });
        const res = await feed(t, token);
        assert.equal(res.status, 403);
        assert.equal(res.body.error_code, 'insufficient_scope');
        const anonymous = await t.app.inject({
          method: 'GET',
          url: '/vps_reseller_provider/public/api/v2/events',
        });
        assert.equal(anonymous.statusCode, 401);
      } finally {
        await t.close();
      }
    });

    test('a failed job tells its error and the status it left; a retried one each status it showed', () =>
      withRunningService(store, async (s) => {
        let stops = 0;
        // The first stop meets a transient error (retried), the second a permanent one.
        const stop: Task<'stop'> = async () => {
          stops++;
          throw new DriverError(stops === 1 ? 'hypervisor busy' : 'the VM is locked', {
            transient: stops === 1,
          });
        };
        const before = (await feed(s.t, s.token)).body.data.length;
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/stop`)).status, 200);
        s.worker({ stop });
        await waitForStatus(s.t, s.token, s.id, 'running');
        const [job] = (await call(s.t, s.token, 'GET', `service/${s.id}/jobs`)).body.data;
        assert.equal(job.status, 'failed');
        const events = (await feed(s.t, s.token)).body.data.slice(before);
        assert.deepEqual(events.map(gist), [
          {
            type: 'service.status_changed',
            service_id: s.id,
            from: 'running',
            to: 'stopping',
            job_id: job.job_id,
          },
          {
            type: 'service.status_changed',
            service_id: s.id,
            from: 'stopping',
            to: 'running',
            job_id: job.job_id,
          },
          {
            type: 'service.status_changed',
            service_id: s.id,
            from: 'running',
            to: 'stopping',
            job_id: job.job_id,
          },
          {
            type: 'service.status_changed',
            service_id: s.id,
            from: 'stopping',
            to: 'running',
            job_id: job.job_id,
          },
          {
            type: 'job.finished',
            job_id: job.job_id,
            service_id: s.id,
            action: 'stop',
            status: 'failed',
            error: 'the VM is locked',
          },
        ]);
      }));

    test('a job whose result the store refused is told as the failure it became, never as a success', () =>
      withRunningService(store, async (s) => {
        // A hypervisor that reports a garbled amount: NaN, which neither store takes in an integer column.
        const restart: Task<'restart'> = async (tc) => ({ ...(await TASKS.restart(tc)), cpu: Number.NaN });
        const before = (await feed(s.t, s.token)).body.data.length;
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
        s.worker({ restart });
        await waitForStatus(s.t, s.token, s.id, 'running');
        const [job] = (await call(s.t, s.token, 'GET', `service/${s.id}/jobs`)).body.data;
        assert.equal(job.status, 'failed');
        const events = (await feed(s.t, s.token)).body.data.slice(before);
        assert.deepEqual(events.map(gist), [
          {
            type: 'service.status_changed',
            service_id: s.id,
            from: 'running',
            to: 'restarting',
            job_id: job.job_id,
          },
          {
            type: 'service.status_changed',
            service_id: s.id,
            from: 'restarting',
            to: 'running',
            job_id: job.job_id,
          },
          {
            type: 'job.finished',
            job_id: job.job_id,
            service_id: s.id,
            action: 'restart',
            status: 'failed',
            error: 'The result of restart could not be saved',
          },
        ]);
      }));

    test('a job that changes nothing tells only its end; a skipped scheduled backup tells it was skipped', async () => {
      let now = Date.now();
      const t = await createTestApp({}, { worker: true, store, clock: { now: () => now } });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'skipped.example.com');
        const start = (await feed(t, token)).body.data.length;
        // A password reset shows no transitional status: only its end is told.
        const reset = await call(t, token, 'POST', `service/${id}/reset-password`, {
          password: 'Correct-Horse-9',
        });
        assert.equal(reset.status, 200);
        const resetJob = reset.headers['x-job-id'];
        await waitForStatus(t, token, id, (_s, d) => d.job === null);
        assert.deepEqual((await feed(t, token)).body.data.slice(start).map(gist), [
          {
            type: 'job.finished',
            job_id: resetJob,
            service_id: id,
            action: 'reset_password',
            status: 'succeeded',
            error: null,
          },
        ]);
        assert.equal(
          (
            await call(t, token, 'POST', `service/${id}/backup-schedule/create`, {
              BsTime: '03:00',
              BSDays: 'mon,tue,wed,thu,fri,sat,sun',
            })
          ).status,
          200,
        );
        assert.equal((await call(t, token, 'POST', `service/${id}/suspend`)).status, 200);
        await waitForStatus(t, token, id, 'suspended');
        const before = (await feed(t, token)).body.data.length;
        // This test's scheduler alone takes the slot.
        await t.background?.stop(5000);
        now += 25 * 3_600_000; // the next 03:00 has passed
        const scheduler = createScheduler({
          store: t.ctx.store,
          clock: { now: () => now },
          log: { info() {}, warn() {}, error() {} },
          signal: createJobSignal(),
          graceMs: 48 * 3_600_000,
          intervalMs: 60_000,
        });
        assert.deepEqual(await scheduler.tick(), ['skipped']);
        const later = await t.token(); // the first one has expired by the server's clock
        const [skipped] = (await call(t, later, 'GET', `service/${id}/jobs`)).body.data;
        assert.equal(skipped.status, 'skipped');
        const events = (await feed(t, later)).body.data.slice(before);
        assert.deepEqual(events.map(gist), [
          {
            type: 'job.finished',
            job_id: skipped.job_id,
            service_id: id,
            action: 'backup_create',
            status: 'skipped',
            error: skipped.error,
          },
        ]);
        assert.match(skipped.error, /suspended/);
      } finally {
        await t.close();
      }
    });
  });
}
