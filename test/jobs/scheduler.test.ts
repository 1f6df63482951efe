import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Clock } from '../../src/domain/clock.ts';
import { createScheduler } from '../../src/jobs/scheduler.ts';
import { createJobSignal } from '../../src/loop/signal.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const silent = { info() {}, warn() {}, error() {} };
const HOUR = 3_600_000;

async function runningService(t: TestApp, token: string, backup = 50): Promise<string> {
  const p = DEMO_CATALOG.products[0]!;
  const res = await call(t, token, 'POST', 'service/create-order', {
    product_id: p.id,
    domain_name: 'sched.example.com',
    template_id: p.os_templates[0],
    cpu: 1,
    ram: 1,
    hdd: 20,
    ip: 1,
    backup,
  });
  const id = res.body.data[0].service_id;
  await call(t, token, 'POST', `service/${id}/create`);
  await waitForStatus(t, token, id, 'running');
  return id;
}

for (const store of testStores()) {
  describe(`scheduler (${store})`, () => {
    test('each due slot becomes exactly one backup job, even with two schedulers ticking at once', async () => {
      // Schedules are driven by a clock the test moves; it stays in the past so the worker (real clock) runs the jobs at once.
      const t = await createTestApp({}, { worker: true, store });
      try {
        // The app's own scheduler reads the real clock: to it this test's January slots are
        // months missed, and a tick of it between the insert and the test's ticks would skip them.
        await t.background!.scheduler.stop();
        const token = await t.token();
        const id = await runningService(t, token);
        let now = Date.parse('2026-01-05T09:59:00Z'); // a Monday
        const clock: Clock = { now: () => now };
        await t.ctx.store.db
          .insertInto('backup_schedules')
          .values({
            id: '55555555-5555-4555-8555-555555555555',
            service_id: id,
            reseller_id: (
              await t.ctx.store.db
                .selectFrom('services')
                .select('reseller_id')
                .where('id', '=', id)
                .executeTakeFirstOrThrow()
            ).reseller_id,
            bs_time: '10:00',
            bs_days: 'mon,tue',
            next_run_at: Date.parse('2026-01-05T10:00:00Z'),
            created_at: now,
          })
          .execute();
        const make = () =>
          createScheduler({
            store: t.ctx.store,
            clock,
            log: silent,
            signal: t.ctx.jobSignal,
            graceMs: 6 * HOUR,
            intervalMs: 1000,
          });
        const a = make();
        const b = make();
        assert.deepEqual(await a.tick(), [], 'nothing due before 10:00');
        now = Date.parse('2026-01-05T10:00:05Z');
        const outcomes = (await Promise.all([a.tick(), b.tick(), a.tick()])).flat();
        assert.equal(outcomes.filter((o) => o === 'queued').length, 1, JSON.stringify(outcomes));
        await waitForStatus(t, token, id, 'running');
        const backups = (await call(t, token, 'GET', `service/${id}/backups`)).body.data;
        assert.equal(backups.length, 1);
        assert.equal(backups[0].kind, 'scheduled');
        assert.equal(backups[0].status, 'available');
        const [s] = (await call(t, token, 'GET', `service/${id}/backup-schedule`)).body.data;
        assert.equal(s.next_run_at, '2026-01-06T10:00:00.000Z');
        // The next day's slot: once again.
        now = Date.parse('2026-01-06T10:00:01Z');
        const second = (await Promise.all([a.tick(), b.tick()])).flat();
        assert.equal(second.filter((o) => o === 'queued').length, 1);
        const slots = await t.ctx.store.db.selectFrom('schedule_slots').selectAll().execute();
        assert.equal(slots.length, 2);
      } finally {
        await t.close();
      }
    });

    test('suspended or busy services and missed slots are recorded as skipped jobs with a reason', async () => {
      const t = await createTestApp({}, { worker: true, store });
      try {
        // As above: only this test's scheduler, on its clock, looks at its slots.
        await t.background!.scheduler.stop();
        const token = await t.token();
        const db = t.ctx.store.db;
        const suspended = await runningService(t, token);
        await call(t, token, 'POST', `service/${suspended}/suspend`);
        await waitForStatus(t, token, suspended, 'suspended');
        const busy = await runningService(t, token);
        const missed = await runningService(t, token);
        const withinGrace = await runningService(t, token);
        const reseller = (await db.selectFrom('resellers').select('id').executeTakeFirstOrThrow()).id;
        let now = Date.parse('2026-01-05T10:00:30Z');
        const clock: Clock = { now: () => now };
        const schedule = (id: string, serviceId: string, nextRunAt: number) =>
          db
            .insertInto('backup_schedules')
            .values({
              id,
              service_id: serviceId,
              reseller_id: reseller,
              bs_time: '10:00',
              bs_days: 'mon',
              next_run_at: nextRunAt,
              created_at: 0,
            })
            .execute();
        await schedule('66666666-6666-4666-8666-666666666661', suspended, Date.parse('2026-01-05T10:00:00Z'));
        await schedule('66666666-6666-4666-8666-666666666662', busy, Date.parse('2026-01-05T10:00:00Z'));
        // Last week's slot, far outside the 6 h grace period: the server was down.
        await schedule('66666666-6666-4666-8666-666666666663', missed, Date.parse('2025-12-29T10:00:00Z'));
        // Four hours ago: inside the grace period, it still runs, once.
        await schedule(
          '66666666-6666-4666-8666-666666666664',
          withinGrace,
          Date.parse('2026-01-05T06:00:00Z'),
        );
        await db
          .updateTable('backup_schedules')
          .set({ bs_time: '06:00' })
          .where('id', '=', '66666666-6666-4666-8666-666666666664')
          .execute();
        // Make `busy` have 10 waiting jobs, with the worker held off.
        await t.background!.stop(2000);
        for (let i = 0; i < 10; i++) {
          await call(t, token, 'POST', `service/${busy}/${i % 2 === 0 ? 'stop' : 'start'}`);
        }
        const scheduler = createScheduler({
          store: t.ctx.store,
          clock,
          log: silent,
          signal: createJobSignal(),
          graceMs: 6 * HOUR,
          intervalMs: 1000,
        });
        const outcomes = await scheduler.tick();
        assert.equal(outcomes.filter((o) => o === 'skipped').length, 3, JSON.stringify(outcomes));
        assert.equal(outcomes.filter((o) => o === 'queued').length, 1);
        const skipped = await db
          .selectFrom('jobs')
          .select(['service_id', 'status', 'error'])
          .where('status', '=', 'skipped')
          .execute();
        const reason = (id: string) => skipped.find((j) => j.service_id === id)?.error ?? '';
        assert.match(reason(suspended), /suspended/);
        assert.match(reason(busy), /jobs already wait/);
        assert.match(reason(missed), /missed while the server was down/);
        const grace = await db
          .selectFrom('jobs')
          .select('status')
          .where('service_id', '=', withinGrace)
          .where('action', '=', 'backup_create')
          .execute();
        assert.deepEqual(
          grace.map((g) => g.status),
          ['queued'],
        );
        // The missed schedule jumped to today's slot (due now) instead of replaying the week.
        const s = await db
          .selectFrom('backup_schedules')
          .select('next_run_at')
          .where('id', '=', '66666666-6666-4666-8666-666666666663')
          .executeTakeFirstOrThrow();
        assert.equal(new Date(s.next_run_at).toISOString(), '2026-01-05T10:00:00.000Z');
        assert.deepEqual(await scheduler.tick(), ['queued'], "today's slot of the missed schedule runs once");
        // Skipped jobs show in the reseller's job list.
        const jobs = (await call(t, token, 'GET', `service/${suspended}/jobs`)).body.data;
        assert.equal(jobs[0].status, 'skipped');
        now += 60_000;
        assert.deepEqual(await scheduler.tick(), [], 'nothing runs twice');
      } finally {
        await t.close();
      }
    });
  });
}
