/**
 * The scheduler's rules against a real store, with services written directly (no worker, no
 * driver) and a clock the test sets: what each due slot becomes, exactly once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { ensureReseller } from '../../src/auth/applications.ts';
import type { Clock } from '../../src/domain/clock.ts';
import type { StableStatus } from '../../src/domain/status-machine.ts';
import { createScheduler, type Scheduler } from '../../src/jobs/scheduler.ts';
import type { JobSignal } from '../../src/loop/signal.ts';
import type { Store } from '../../src/store/database.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { waitUntil } from '../helpers/budget.ts';
import { mockSetTimeout } from '../helpers/mock-timeout.ts';
import { type StoreKind, testStores } from '../helpers/stores.ts';

const HOUR = 3_600_000;
const GRACE = 6 * HOUR;
const at = (s: string) => Date.parse(s);
const iso = (ms: number) => new Date(ms).toISOString();

interface Harness {
  readonly t: TestApp;
  readonly store: Store;
  readonly resellerId: string;
  now: number;
  /** How many times a scheduler read the clock: each tick reads it before anything else. */
  clockReads: number;
  notified: number;
  errors: unknown[];
  scheduler(): Scheduler;
  service(o?: Partial<ServiceFields>): Promise<string>;
  schedule(serviceId: string, bsTime: string, bsDays: string, nextRunAt: number): Promise<string>;
  close(): Promise<void>;
}

interface ServiceFields {
  status: StableStatus;
  projected: StableStatus;
  backup: number;
  pendingJobs: number;
  jobSeq: number;
}

async function harness(store: StoreKind): Promise<Harness> {
  const t = await createTestApp({}, { store, demo: false });
  const reseller = await ensureReseller(t.ctx.store.db, 'acme', Date.now());
  const db = t.ctx.store.db;
  const h: Harness = {
    t,
    store: t.ctx.store,
    resellerId: reseller.id,
    now: at('2026-01-05T10:00:20Z'), // a Monday
    clockReads: 0,
    notified: 0,
    errors: [],
    scheduler() {
      const clock: Clock = {
        now: () => {
          h.clockReads++;
          return h.now;
        },
      };
      const signal: JobSignal = {
        notify: () => {
          h.notified++;
        },
        wait: (ms) => new Promise((r) => setTimeout(r, ms)),
      };
      const log = { info() {}, warn() {}, error: (obj: unknown) => void h.errors.push(obj) };
      return createScheduler({ store: h.store, clock, log, signal, graceMs: GRACE, intervalMs: 20 });
    },
    async service(o = {}) {
      const id = randomUUID();
      const status = o.status ?? 'running';
      await db
        .insertInto('services')
        .values({
          id,
          reseller_id: reseller.id,
          client_id: 'c',
          product_id: 'p',
          template_id: 'tpl',
          domain_name: 'sched.example.com',
          username: 'root',
          password_enc: 'x',
          cpu: 1,
          ram: 1,
          hdd: 20,
          ip_count: 1,
          backup: o.backup ?? 50,
          status,
          resume_status: status === 'suspended' ? 'running' : null,
          suspend_reason: null,
          projected_status: o.projected ?? status,
          projected_resume: (o.projected ?? status) === 'suspended' ? 'running' : null,
          pending_jobs: o.pendingJobs ?? 0,
          job_seq: o.jobSeq ?? 0,
          active_job_id: null,
          host_id: null,
          ips: '[]',
          disk_revision: null,
          created_at: 0,
          updated_at: 0,
          terminated_at: null,
          ssh_keys: '[]',
          rescue_since: null,
        })
        .execute();
      return id;
    },
    async schedule(serviceId, bsTime, bsDays, nextRunAt) {
      const id = randomUUID();
      await db
        .insertInto('backup_schedules')
        .values({
          id,
          service_id: serviceId,
          reseller_id: reseller.id,
          bs_time: bsTime,
          bs_days: bsDays,
          next_run_at: nextRunAt,
          created_at: 0,
        })
        .execute();
      return id;
    },
    close: () => t.close(),
  };
  return h;
}

const jobsOf = (h: Harness, serviceId: string) =>
  h.store.db.selectFrom('jobs').selectAll().where('service_id', '=', serviceId).orderBy('seq').execute();
const backupsOf = (h: Harness, serviceId: string) =>
  h.store.db.selectFrom('backups').selectAll().where('service_id', '=', serviceId).execute();
const serviceRow = (h: Harness, id: string) =>
  h.store.db.selectFrom('services').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const nextRunOf = async (h: Harness, scheduleId: string) =>
  iso(
    (
      await h.store.db
        .selectFrom('backup_schedules')
        .select('next_run_at')
        .where('id', '=', scheduleId)
        .executeTakeFirstOrThrow()
    ).next_run_at,
  );
const slotsOf = (h: Harness, scheduleId: string) =>
  h.store.db
    .selectFrom('schedule_slots')
    .selectAll()
    .where('schedule_id', '=', scheduleId)
    .orderBy('slot_at')
    .execute();

for (const store of testStores()) {
  describe(`scheduler rules (${store})`, () => {
    test('a due slot queues one backup_create job with a scheduled backup; later ticks and a restart do not repeat it', async () => {
      const h = await harness(store);
      try {
        const svc = await h.service({ jobSeq: 3 });
        const sched = await h.schedule(svc, '10:00', 'mon,wed', at('2026-01-05T10:00:00Z'));
        const notYet = await h.schedule(svc, '10:01', 'mon', at('2026-01-05T10:01:00Z'));
        const a = h.scheduler();
        assert.deepEqual(await a.tick(), ['queued']);
        assert.equal(h.notified, 1, 'the worker is woken');

        const jobs = await jobsOf(h, svc);
        assert.equal(jobs.length, 1);
        const job = jobs[0]!;
        assert.equal(job.action, 'backup_create');
        assert.equal(job.status, 'queued');
        assert.equal(job.seq, 4);
        assert.equal(job.created_at, h.now, 'job times come from the injected clock');
        const params = JSON.parse(job.params);
        assert.equal(params.kind, 'scheduled');
        assert.equal(params.schedule_id, sched);
        const backups = await backupsOf(h, svc);
        assert.equal(backups.length, 1);
        assert.equal(backups[0]!.kind, 'scheduled');
        assert.equal(backups[0]!.status, 'creating');
        assert.equal(backups[0]!.id, params.backup_id);
        const row = await serviceRow(h, svc);
        assert.equal(row.pending_jobs, 1);
        assert.equal(row.job_seq, 4);
        assert.equal(row.projected_status, 'running');

        assert.equal(await nextRunOf(h, sched), '2026-01-07T10:00:00.000Z', 'on to Wednesday');
        const slots = await slotsOf(h, sched);
        assert.deepEqual(
          slots.map((s) => [iso(s.slot_at), s.outcome, s.job_id]),
          [['2026-01-05T10:00:00.000Z', 'queued', job.id]],
        );

        assert.deepEqual(await a.tick(), [], 'a second tick finds nothing due');
        assert.deepEqual(await h.scheduler().tick(), [], 'a restarted scheduler does not replay the slot');
        h.now = at('2026-01-05T10:01:00Z');
        assert.deepEqual(await a.tick(), ['queued'], 'the other schedule, in its own minute');
        assert.equal(await nextRunOf(h, notYet), '2026-01-12T10:01:00.000Z');
        assert.equal((await jobsOf(h, svc)).length, 2);
      } finally {
        await h.close();
      }
    });

    test('several schedulers ticking at once over many due schedules: each slot once', async () => {
      const h = await harness(store);
      try {
        const schedules: string[] = [];
        for (let i = 0; i < 12; i++) {
          const svc = await h.service();
          schedules.push(await h.schedule(svc, '10:00', 'mon', at('2026-01-05T10:00:00Z')));
          // Two schedules on one service: their jobs need different sequence numbers.
          if (i % 3 === 0) schedules.push(await h.schedule(svc, '09:59', 'mon', at('2026-01-05T09:59:00Z')));
        }
        const schedulers = Array.from({ length: 4 }, () => h.scheduler());
        for (let round = 0; round < 3; round++) await Promise.all(schedulers.map((s) => s.tick()));
        const jobs = await h.store.db.selectFrom('jobs').select(['params', 'status']).execute();
        const perSchedule = new Map<string, number>();
        for (const j of jobs) {
          const id = JSON.parse(j.params).schedule_id as string;
          perSchedule.set(id, (perSchedule.get(id) ?? 0) + 1);
        }
        assert.equal(jobs.length, schedules.length);
        for (const id of schedules) assert.equal(perSchedule.get(id), 1, id);
        assert.ok(jobs.every((j) => j.status === 'queued'));
        const slots = await h.store.db.selectFrom('schedule_slots').selectAll().execute();
        assert.equal(slots.length, schedules.length);
        assert.deepEqual(h.errors, []);
      } finally {
        await h.close();
      }
    });

    test('a service that refuses the backup gets a skipped job with the reason, and nothing waits', async () => {
      const h = await harness(store);
      try {
        const slot = at('2026-01-05T10:00:00Z');
        const suspended = await h.service({ status: 'suspended', jobSeq: 5 });
        const terminating = await h.service({ status: 'running', projected: 'terminated', pendingJobs: 1 });
        const busy = await h.service({ pendingJobs: 10, jobSeq: 10 });
        const noBackup = await h.service({ backup: 0 });
        const full = await h.service({ backup: 10 });
        for (const size of [5, 5]) {
          await h.store.db
            .insertInto('backups')
            .values({
              id: randomUUID(),
              service_id: full,
              reseller_id: h.resellerId,
              status: 'available',
              kind: 'manual',
              size_gb: size,
              created_at: 0,
              updated_at: 0,
            })
            .execute();
        }
        const cases: [string, RegExp][] = [
          [suspended, /suspended/],
          [terminating, /terminated/],
          [busy, /10 jobs already wait/],
          [noBackup, /no backup space/],
          [full, /Backups use 10 of 10 GB/],
        ];
        const scheduleIds = new Map<string, string>();
        for (const [svc] of cases) scheduleIds.set(svc, await h.schedule(svc, '10:00', 'mon', slot));
        const before = new Map<string, Awaited<ReturnType<typeof serviceRow>>>();
        for (const [svc] of cases) before.set(svc, await serviceRow(h, svc));

        const outcomes = await h.scheduler().tick();
        assert.deepEqual(outcomes, Array(cases.length).fill('skipped'));
        assert.equal(h.notified, 0, 'nothing queued, nothing to wake');
        for (const [svc, reason] of cases) {
          const jobs = await jobsOf(h, svc);
          assert.equal(jobs.length, 1, svc);
          const job = jobs[0]!;
          assert.equal(job.status, 'skipped');
          assert.equal(job.action, 'backup_create');
          assert.match(job.error ?? '', reason);
          assert.match(job.error ?? '', /2026-01-05T10:00:00\.000Z/, 'the reason names the slot');
          assert.equal(job.finished_at, h.now);
          const b = before.get(svc)!;
          const after = await serviceRow(h, svc);
          assert.equal(job.seq, b.job_seq + 1, 'a skipped job takes the next sequence number');
          assert.equal(after.job_seq, b.job_seq + 1);
          assert.equal(after.pending_jobs, b.pending_jobs, 'a skipped job waits for nothing');
          assert.equal(after.projected_status, b.projected_status);
          const [s] = await slotsOf(h, scheduleIds.get(svc)!);
          assert.equal(s?.outcome, 'skipped');
          assert.equal(s?.job_id, job.id);
          assert.equal(await nextRunOf(h, scheduleIds.get(svc)!), '2026-01-12T10:00:00.000Z');
        }
        assert.equal((await backupsOf(h, noBackup)).length, 0);
        assert.equal((await backupsOf(h, full)).length, 2, 'no backup record for a refused slot');
        assert.deepEqual(await h.scheduler().tick(), [], 'a refused slot is not retried');
      } finally {
        await h.close();
      }
    });

    test('grace period: a slot just inside it runs once, one just outside is skipped as missed', async () => {
      const h = await harness(store);
      try {
        h.now = at('2026-01-05T16:30:00Z');
        const inside = await h.service();
        const outside = await h.service();
        // 10:31 is 5 h 59 min before now; 10:29 is 6 h 1 min before.
        const s1 = await h.schedule(inside, '10:31', 'mon', at('2026-01-05T10:31:00Z'));
        const s2 = await h.schedule(outside, '10:29', 'mon', at('2026-01-05T10:29:00Z'));
        const a = h.scheduler();
        const outcomes = await Promise.all([a.tick(), h.scheduler().tick()]);
        assert.deepEqual(
          outcomes
            .flat()
            .filter((o) => o !== 'taken')
            .sort(),
          ['queued', 'skipped'],
        );
        const [ji] = await jobsOf(h, inside);
        assert.equal(ji?.status, 'queued');
        const jo = await jobsOf(h, outside);
        assert.equal(jo.length, 1);
        assert.equal(jo[0]!.status, 'skipped');
        assert.match(jo[0]!.error ?? '', /2026-01-05T10:29:00\.000Z missed while the server was down$/);
        assert.equal(await nextRunOf(h, s1), '2026-01-12T10:31:00.000Z');
        assert.equal(await nextRunOf(h, s2), '2026-01-12T10:29:00.000Z');
        assert.deepEqual(await a.tick(), []);
      } finally {
        await h.close();
      }
    });

    test('a long outage records one skipped job, not one per missed slot, and does not replay them', async () => {
      const h = await harness(store);
      try {
        const every = 'mon,tue,wed,thu,fri,sat,sun';
        const catchUp = await h.service();
        const pastToday = await h.service();
        const ancient = await h.service();
        // Down from 2026-01-05 10:00 to 2026-02-04 12:00 (30 days).
        h.now = at('2026-02-04T12:00:00Z');
        const s1 = await h.schedule(catchUp, '10:00', every, at('2026-01-05T10:00:00Z'));
        // Today's 05:00 slot is 7 h ago: outside the grace period too.
        const s2 = await h.schedule(pastToday, '05:00', every, at('2026-01-05T05:00:00Z'));
        // A store left untouched for years: the count is bounded, the scheduler is not stuck.
        const s3 = await h.schedule(ancient, '00:00', every, at('2020-01-01T00:00:00Z'));
        const a = h.scheduler();
        assert.deepEqual(await a.tick(), ['skipped', 'skipped', 'skipped']);
        const [j3] = await jobsOf(h, ancient);
        assert.match(j3?.error ?? '', /with at least 1000 later slots/);
        assert.equal(await nextRunOf(h, s3), '2026-02-05T00:00:00.000Z');
        const [j2] = await jobsOf(h, pastToday);
        assert.match(j2?.error ?? '', /missed while the server was down/);
        assert.match(j2?.error ?? '', /with 30 later slots up to 2026-02-04T05:00:00\.000Z/);
        assert.equal(await nextRunOf(h, s2), '2026-02-05T05:00:00.000Z', 'past now');
        // Today's 10:00 slot is 2 h old, inside the grace period: it is where the schedule resumes.
        const [j1] = await jobsOf(h, catchUp);
        assert.match(j1?.error ?? '', /^Scheduled backup of 2026-01-05T10:00:00\.000Z missed/);
        assert.match(j1?.error ?? '', /with 29 later slots up to 2026-02-03T10:00:00\.000Z/);
        assert.equal(await nextRunOf(h, s1), '2026-02-04T10:00:00.000Z');

        assert.deepEqual(await a.tick(), ['queued'], "today's slot inside the grace period runs");
        assert.deepEqual(await a.tick(), []);
        assert.deepEqual(
          (await jobsOf(h, catchUp)).map((j) => j.status),
          ['skipped', 'queued'],
        );
        assert.deepEqual(
          (await slotsOf(h, s1)).map((s) => [iso(s.slot_at), s.outcome]),
          [
            ['2026-01-05T10:00:00.000Z', 'skipped'],
            ['2026-02-04T10:00:00.000Z', 'queued'],
          ],
        );
        assert.equal((await jobsOf(h, pastToday)).length, 1);
        assert.equal((await jobsOf(h, ancient)).length, 1);
      } finally {
        await h.close();
      }
    });

    test('a broken schedule row is logged and does not hold up the others', async () => {
      const h = await harness(store);
      try {
        const svc = await h.service();
        await h.schedule(svc, '99:99', 'mon', at('2026-01-05T09:00:00Z'));
        const good = await h.schedule(svc, '10:00', 'mon', at('2026-01-05T10:00:00Z'));
        const outcomes = await h.scheduler().tick();
        assert.deepEqual(outcomes, ['failed', 'queued']);
        assert.equal(h.errors.length, 1);
        assert.equal((await slotsOf(h, good)).length, 1);
      } finally {
        await h.close();
      }
    });

    test('a deleted schedule is not run, and a service whose schedules were removed is left alone', async () => {
      const h = await harness(store);
      try {
        const svc = await h.service({ status: 'terminated' });
        const id = await h.schedule(svc, '10:00', 'mon', at('2026-01-05T10:00:00Z'));
        await h.store.db.deleteFrom('backup_schedules').where('id', '=', id).execute();
        assert.deepEqual(await h.scheduler().tick(), []);
        assert.equal((await jobsOf(h, svc)).length, 0);
      } finally {
        await h.close();
      }
    });

    test('start() ticks on its interval until stop()', async (t) => {
      const h = await harness(store);
      // The interval passes only when the test ticks the mocked setTimeout.
      mockSetTimeout(t);
      try {
        const svc = await h.service();
        const id = await h.schedule(svc, '10:01', 'mon', at('2026-01-05T10:01:00Z'));
        const s = h.scheduler();
        s.start();
        // A tick starts only after the one before it ended: a second one means the first,
        // at 10:00:20, has run to its end.
        await waitUntil('a second tick', () => {
          t.mock.timers.tick(20);
          return h.clockReads >= 2;
        });
        assert.equal((await slotsOf(h, id)).length, 0, 'not due yet');
        h.now = at('2026-01-05T10:01:00Z');
        await waitUntil('the running scheduler to handle the slot', async () => {
          t.mock.timers.tick(20);
          return (await slotsOf(h, id)).length > 0;
        });
        await s.stop();
        const reads = h.clockReads;
        h.now = at('2026-01-12T10:01:00Z');
        t.mock.timers.tick(60_000);
        assert.equal(h.clockReads, reads, 'a stopped scheduler ticks no more');
        assert.equal((await slotsOf(h, id)).length, 1, 'a stopped scheduler does nothing');
      } finally {
        t.mock.timers.reset();
        await h.close();
      }
    });
  });
}
