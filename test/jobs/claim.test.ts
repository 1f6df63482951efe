/**
 * The claim (src/jobs/claim.ts): one statement on PostgreSQL, a transaction of statements on
 * SQLite, the same rules on both. A worker takes at most one job of a service at a time, always
 * the first in the service's line, in queue order; concurrent workers never take a job twice.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import pg from 'pg';
import { claimJobs, extendLeases, recoverExpiredJobs } from '../../src/jobs/claim.ts';
import { findService } from '../../src/store/repos/services.ts';
import { call, createTestApp, type TestApp } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { until, withRunningService } from '../helpers/job-worker.ts';
import { lockWaiters } from '../helpers/pg-lock-waits.ts';
import { testStores } from '../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };
const LEASE_MS = 600_000;

/** Orders a service and asks for `ops` on it (nothing runs: no worker); returns the service id and the job ids in order. */
async function serviceWithJobs(t: TestApp, token: string, domain: string, ops: string[]) {
  const o = await call(t, token, 'POST', 'service/create-order', smallOrder(domain), B);
  assert.equal(o.status, 200, JSON.stringify(o.body));
  const id: string = o.body.data[0].service_id;
  const jobs: string[] = [];
  for (const op of ops) {
    const r = await call(t, token, 'POST', `service/${id}/${op}`, undefined, B);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    jobs.push(String(r.headers['x-job-id']));
  }
  return { id, jobs };
}

async function withApp(store: 'sqlite' | 'postgres', body: (t: TestApp, token: string) => Promise<void>) {
  const t = await createTestApp({}, { store });
  try {
    await body(t, await t.token({ reseller: 'acme' }));
  } finally {
    await t.close();
  }
}

const activeJob = async (t: TestApp, serviceId: string) =>
  (
    await t.ctx.store.db
      .selectFrom('services')
      .select('active_job_id')
      .where('id', '=', serviceId)
      .executeTakeFirstOrThrow()
  ).active_job_id;

for (const store of testStores()) {
  describe(`job claim (${store})`, () => {
    test('takes the first job of each service only, running and owned, and nothing more while they run', () =>
      withApp(store, async (t, token) => {
        const services = [];
        for (let i = 0; i < 6; i++)
          services.push(await serviceWithJobs(t, token, `line${i}.example.com`, ['create', 'stop']));
        const now = t.ctx.clock.now();
        const claimed = await claimJobs(t.ctx.store, 'worker-a', 100, now, Date.now() + LEASE_MS);
        assert.deepEqual(claimed.map((j) => j.id).sort(), services.map((s) => s.jobs[0]).sort());
        for (const j of claimed) {
          assert.equal(j.action, 'create');
          assert.equal(j.attempts, 1);
          assert.equal(j.status, 'running');
        }
        for (const s of services) assert.equal(await activeJob(t, s.id), s.jobs[0]);
        // Each job comes with its service as the claim left it: what a read of it now finds.
        for (const j of claimed) {
          const service = await findService(t.ctx.store.db, j.serviceId);
          assert.ok(service);
          assert.equal(service.activeJobId, j.id);
          assert.deepEqual(j.service, service);
        }
        const rows = await t.ctx.store.db
          .selectFrom('jobs')
          .select(['id', 'status', 'locked_by', 'started_at'])
          .where(
            'id',
            'in',
            services.map((s) => s.jobs[0]!),
          )
          .execute();
        for (const r of rows) {
          assert.equal(r.status, 'running');
          assert.equal(r.locked_by, 'worker-a');
          assert.equal(Number(r.started_at), now);
        }
        // The stops wait behind running creates: a second claim takes nothing.
        assert.deepEqual(await claimJobs(t.ctx.store, 'worker-b', 100, now, Date.now() + LEASE_MS), []);
      }));

    test('takes at most `limit` jobs, the longest due first', () =>
      withApp(store, async (t, token) => {
        const a = await serviceWithJobs(t, token, 'a.example.com', ['create']);
        const b = await serviceWithJobs(t, token, 'b.example.com', ['create']);
        const c = await serviceWithJobs(t, token, 'c.example.com', ['create']);
        const now = t.ctx.clock.now();
        // b has waited longest, then c, then a.
        const db = t.ctx.store.db;
        await db
          .updateTable('jobs')
          .set({ run_at: now - 3000 })
          .where('id', '=', b.jobs[0]!)
          .execute();
        await db
          .updateTable('jobs')
          .set({ run_at: now - 2000 })
          .where('id', '=', c.jobs[0]!)
          .execute();
        const first = await claimJobs(t.ctx.store, 'w', 2, now, Date.now() + LEASE_MS);
        assert.deepEqual(
          first.map((j) => j.id),
          [b.jobs[0], c.jobs[0]],
        );
        const second = await claimJobs(t.ctx.store, 'w', 2, now, Date.now() + LEASE_MS);
        assert.deepEqual(
          second.map((j) => j.id),
          [a.jobs[0]],
        );
      }));

    test('jobs that cannot run yet at the front of the queue hold back none behind them', () =>
      withApp(store, async (t, token) => {
        // Four services with ten jobs each (as many as a service may have waiting) first, then
        // three services' creates.
        const ops = ['create', ...Array.from({ length: 9 }, (_, i) => (i % 2 === 0 ? 'stop' : 'start'))];
        const front = [];
        for (const d of ['f1', 'f2', 'f3', 'f4'])
          front.push(await serviceWithJobs(t, token, `${d}.example.com`, ops));
        const behind = [];
        for (const d of ['b1', 'b2', 'b3'])
          behind.push(await serviceWithJobs(t, token, `${d}.example.com`, ['create']));
        const now = t.ctx.clock.now();
        const claim = () => claimJobs(t.ctx.store, 'w', 4, now, Date.now() + LEASE_MS);
        assert.deepEqual(
          (await claim()).map((j) => j.id),
          front.map((f) => f.jobs[0]),
        );
        // The front's 36 other jobs wait for their services' running ones; PostgreSQL's claim
        // looks among 16 a step, so its first two steps hold none it may take.
        assert.deepEqual(
          (await claim()).map((j) => j.id),
          behind.map((b) => b.jobs[0]),
        );
      }));

    // 20: PostgreSQL's first step (16) ends among them; 40: two whole steps at the one key, so the
    // third must leave out the jobs of both.
    for (const n of [20, 40])
      test(`jobs of ${n} services due at one moment: a step that ends among them misses none`, () =>
        withApp(store, async (t, token) => {
          const services = [];
          for (let i = 0; i < n; i++)
            services.push(await serviceWithJobs(t, token, `tie${i}.example.com`, ['create']));
          const now = t.ctx.clock.now();
          const db = t.ctx.store.db;
          // All due at one moment, each its service's first job: one key (run_at, seq) for all.
          await db
            .updateTable('jobs')
            .set({ run_at: now - 1000 })
            .execute();
          // Every service but the last has a job running (its own create stands for it here).
          for (const s of services.slice(0, -1))
            await db
              .updateTable('services')
              .set({ active_job_id: s.jobs[0]! })
              .where('id', '=', s.id)
              .execute();
          const claimed = await claimJobs(t.ctx.store, 'w', 4, now, Date.now() + LEASE_MS);
          assert.deepEqual(
            claimed.map((j) => j.id),
            [services.at(-1)?.jobs[0]],
          );
        }));

    test('a first job waiting out a retry holds its line: the job behind it, though due, waits', () =>
      withApp(store, async (t, token) => {
        const s = await serviceWithJobs(t, token, 'retry.example.com', ['create', 'stop']);
        const now = t.ctx.clock.now();
        // As a failed attempt leaves it: queued again, due a minute from now.
        await t.ctx.store.db
          .updateTable('jobs')
          .set({ run_at: now + 60_000 })
          .where('id', '=', s.jobs[0]!)
          .execute();
        assert.deepEqual(await claimJobs(t.ctx.store, 'w', 10, now, Date.now() + LEASE_MS), []);
        assert.equal(await activeJob(t, s.id), null);
        const later = await claimJobs(t.ctx.store, 'w', 10, now + 60_000, Date.now() + LEASE_MS);
        assert.deepEqual(
          later.map((j) => j.id),
          [s.jobs[0]],
        );
      }));

    test('a job whose service runs another job stays queued', () =>
      withApp(store, async (t, token) => {
        const s = await serviceWithJobs(t, token, 'busy.example.com', ['create']);
        // Another worker's job holds the service (as recovery or an operator's run would leave it).
        await t.ctx.store.db
          .updateTable('services')
          .set({ active_job_id: 'other' })
          .where('id', '=', s.id)
          .execute();
        const now = t.ctx.clock.now();
        assert.deepEqual(await claimJobs(t.ctx.store, 'w', 10, now, Date.now() + LEASE_MS), []);
        const row = await t.ctx.store.db
          .selectFrom('jobs')
          .select(['status', 'attempts'])
          .where('id', '=', s.jobs[0]!)
          .executeTakeFirstOrThrow();
        assert.deepEqual({ ...row, attempts: Number(row.attempts) }, { status: 'queued', attempts: 0 });
      }));

    test('workers claiming at once take every job once, one per service, each the first of its line', () =>
      withApp(store, async (t, token) => {
        const services = [];
        for (let i = 0; i < 24; i++)
          services.push(await serviceWithJobs(t, token, `race${i}.example.com`, ['create', 'stop']));
        const now = t.ctx.clock.now();
        const taken: { worker: string; id: string; serviceId: string }[] = [];
        // Four workers, each claiming 5 at a time until a claim comes back empty; on PostgreSQL
        // their claims run at once on separate connections.
        await Promise.all(
          ['w1', 'w2', 'w3', 'w4'].map(async (worker) => {
            for (;;) {
              const jobs = await claimJobs(t.ctx.store, worker, 5, now, Date.now() + LEASE_MS);
              if (jobs.length === 0) return;
              for (const j of jobs) taken.push({ worker, id: j.id, serviceId: j.serviceId });
            }
          }),
        );
        const ids = taken.map((x) => x.id);
        assert.equal(new Set(ids).size, ids.length, 'no job taken twice');
        assert.deepEqual([...ids].sort(), services.map((s) => s.jobs[0]).sort());
        for (const s of services) assert.equal(await activeJob(t, s.id), s.jobs[0]);
        const owners = await t.ctx.store.db
          .selectFrom('jobs')
          .select(['id', 'locked_by'])
          .where('status', '=', 'running')
          .execute();
        assert.deepEqual(
          new Map(owners.map((o) => [o.id, o.locked_by])),
          new Map(taken.map((x) => [x.id, x.worker])),
        );
      }));
  });
}

/** Rows of `table` a plan's nodes read (actual rows times loops), from EXPLAIN's JSON. */
function rowsRead(node: Record<string, unknown>, table: string): number {
  const own =
    node['Relation Name'] === table ? Number(node['Actual Rows']) * Number(node['Actual Loops']) : 0;
  const children = (node['Plans'] as Record<string, unknown>[] | undefined) ?? [];
  return own + children.reduce((n, c) => n + rowsRead(c, table), 0);
}

describe('job claim (postgres): the queue read a step at a time', {
  skip: testStores().includes('postgres') ? false : 'PostgreSQL only',
}, () => {
  test('statistics taken with the queue empty do not make a claim read the whole queue', () =>
    withApp('postgres', async (t, token) => {
      for (let i = 0; i < 300; i++) await serviceWithJobs(t, token, `queue${i}.example.com`, ['create']);
      const db = t.ctx.store.db;
      // The statistics of a quiet queue (every job finished), then the burst: 300 queued.
      await db.updateTable('jobs').set({ status: 'succeeded' }).execute();
      await sql`analyze`.execute(db);
      await db.updateTable('jobs').set({ status: 'queued' }).execute();
      // The claim's statements as sent (a view of the store that keeps each one).
      const sent: CompiledQuery[] = [];
      const seeing = new Proxy(db, {
        get(target, p) {
          if (p === 'executeQuery')
            return (q: CompiledQuery) => {
              sent.push(q);
              return target.executeQuery(q);
            };
          const v: unknown = Reflect.get(target, p, target);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
      const now = t.ctx.clock.now();
      const claimed = await claimJobs(
        { db: seeing, features: t.ctx.store.features },
        'w',
        4,
        now,
        Date.now() + LEASE_MS,
      );
      assert.equal(claimed.length, 4);
      // Each statement again, explained with its actual rows, and undone.
      await db.updateTable('jobs').set({ status: 'queued', locked_by: null }).execute();
      await db.updateTable('services').set({ active_job_id: null }).execute();
      assert.ok(sent.length > 0);
      for (const q of sent) {
        // Thrown to roll the explained statement's writes back, with what it read.
        const undone = (read: number) => Object.assign(new Error('undone'), { read });
        const read = await db
          .transaction()
          .execute(async (tx) => {
            const plan = await tx.executeQuery<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>(
              CompiledQuery.raw(`explain (analyze, format json) ${q.sql}`, [...q.parameters]),
            );
            throw undone(rowsRead(plan.rows[0]?.['QUERY PLAN'][0].Plan ?? {}, 'jobs'));
          })
          .catch((e: unknown) => (e instanceof Error && 'read' in e ? Number(e.read) : Promise.reject(e)));
        assert.ok(
          read <= 100,
          `a claim's statement read ${read} job rows of 300 queued: ${q.sql.slice(0, 80)}`,
        );
      }
    }));
});

for (const store of testStores()) {
  test(`a claim whose time was read before the job ahead ended starts its job after that end (${store})`, () =>
    withRunningService(store, async (s) => {
      await call(s.t, s.token, 'POST', `service/${s.id}/restart`, undefined, B);
      await call(s.t, s.token, 'POST', `service/${s.id}/stop`, undefined, B);
      // A worker reads the time for its claim, and its claim's statement is held up...
      const readEarly = s.t.ctx.clock.now();
      await until(() => s.t.ctx.clock.now() > readEarly, 'the clock moves on');
      // ...while another worker runs the restart to its end. (The stop is kept out of that
      // worker's reach meanwhile: not due until far later, and then due as it was.)
      const { id: stopId, run_at: due } = await s.jobRow('stop');
      const setDue = (at: number) =>
        s.t.ctx.store.db.updateTable('jobs').set({ run_at: at }).where('id', '=', stopId).execute();
      await setDue(Number(due) + 3_600_000);
      const w = s.worker();
      await until(async () => (await s.jobRow('restart')).status === 'succeeded', 'the restart ends');
      await w.stop();
      await setDue(Number(due));
      const [claimed] = await claimJobs(s.t.ctx.store, 'late-worker', 1, readEarly, Date.now() + LEASE_MS);
      assert.equal(claimed?.id, stopId);
      const restarted = await s.jobRow('restart');
      const stopping = await s.jobRow('stop');
      assert.ok(Number(restarted.finished_at) > readEarly);
      assert.ok(
        Number(stopping.started_at) >= Number(restarted.finished_at),
        `the stop started at ${stopping.started_at}, the restart before it ended at ${restarted.finished_at}`,
      );
      // What the API shows: the jobs one after the other.
      const [, shownRestart, shownStop] = await s.jobs();
      assert.ok(Date.parse(shownStop.started_at) >= Date.parse(shownRestart.finished_at));
    }));
}

/** The leases of `jobIds`, in that order. */
const leases = async (t: TestApp, jobIds: string[]) => {
  const rows = await t.ctx.store.db
    .selectFrom('jobs')
    .select(['id', 'locked_until'])
    .where('id', 'in', jobIds)
    .execute();
  return jobIds.map((id) => Number(rows.find((r) => r.id === id)?.locked_until));
};

for (const store of testStores()) {
  test(`a lease extension extends this worker's running jobs, and no other's (${store})`, () =>
    withApp(store, async (t, token) => {
      const a = await serviceWithJobs(t, token, 'lease-a.example.com', ['create', 'stop']);
      const b = await serviceWithJobs(t, token, 'lease-b.example.com', ['create']);
      const now = t.ctx.clock.now();
      const first = Date.now() + LEASE_MS;
      const mine = await claimJobs(t.ctx.store, 'worker-a', 1, now, first);
      const theirs = await claimJobs(t.ctx.store, 'worker-b', 1, now, first);
      assert.equal(mine.length, 1);
      assert.equal(theirs.length, 1);
      const later = first + 60_000;
      // Asked for its own job, the other's and a queued one: only its own moves.
      const queued = a.jobs[1]!;
      await extendLeases(t.ctx.store, 'worker-a', [mine[0]!.id, theirs[0]!.id, queued], later);
      assert.deepEqual(await leases(t, [mine[0]!.id, theirs[0]!.id]), [later, first]);
      const q = await t.ctx.store.db
        .selectFrom('jobs')
        .select(['status', 'locked_until'])
        .where('id', '=', queued)
        .executeTakeFirstOrThrow();
      assert.deepEqual({ ...q }, { status: 'queued', locked_until: null });
      assert.ok([a.jobs[0], b.jobs[0]].includes(mine[0]!.id));
    }));
}

/**
 * Runs `work` while `holder` (a PostgreSQL connection in a transaction) holds rows: whether it
 * waited for a lock. If it did, the holder's transaction is rolled back so that it can end.
 */
async function waitedForLock(holder: pg.Client, work: Promise<unknown>): Promise<boolean> {
  let done = false;
  const settled = work.finally(() => {
    done = true;
  });
  settled.catch(() => {});
  await until(async () => done || (await lockWaiters(holder)) > 0, 'the work to end or to wait for a lock');
  // Waiting for the holder's rows, it cannot have ended since.
  const blocked = !done;
  if (blocked) await holder.query('rollback');
  await settled;
  return blocked;
}

describe('job claim (postgres): a lease extension never waits for a row', {
  skip: testStores().includes('postgres') ? false : 'PostgreSQL only',
}, () => {
  test("a job whose row another transaction holds keeps its lease; the others' are extended at once", () =>
    withApp('postgres', async (t, token) => {
      const services = [];
      for (let i = 0; i < 4; i++)
        services.push(await serviceWithJobs(t, token, `held${i}.example.com`, ['create']));
      const now = t.ctx.clock.now();
      const first = Date.now() + LEASE_MS;
      const jobs = (await claimJobs(t.ctx.store, 'worker-a', 10, now, first)).map((j) => j.id).sort();
      assert.equal(jobs.length, 4);
      // Another transaction holds the second and the fourth jobs' rows (as a group of job ends
      // does while it writes them); an extension that waited for one would hold the rows it had
      // reached, and the holder's next write of one of those would deadlock.
      const held = [jobs[1]!, jobs[3]!];
      const holder = new pg.Client(t.ctx.config.databaseUrl);
      await holder.connect();
      try {
        await holder.query('begin');
        await holder.query('update jobs set error = error where id = any($1)', [held]);
        const later = first + 60_000;
        const blocked = await waitedForLock(holder, extendLeases(t.ctx.store, 'worker-a', jobs, later));
        assert.equal(blocked, false, 'the extension waited for a row another transaction held');
        // The held jobs keep the lease they had, until the next extension; the others have the new one.
        assert.deepEqual(await leases(t, jobs), [later, first, later, first]);
        // The holder's own writes of the rows go on and commit.
        await holder.query('update jobs set error = error where id = any($1)', [jobs]);
        await holder.query('commit');
        await extendLeases(t.ctx.store, 'worker-a', jobs, later);
        assert.deepEqual(await leases(t, jobs), [later, later, later, later]);
      } finally {
        await holder.query('rollback').catch(() => {});
        await holder.end();
      }
    }));
});

describe('job claim (postgres): a recovery of expired jobs never waits for a row', {
  skip: testStores().includes('postgres') ? false : 'PostgreSQL only',
}, () => {
  test("a job whose row or whose service's row another transaction holds is left to the next round", () =>
    withApp('postgres', async (t, token) => {
      const { id } = await serviceWithJobs(t, token, 'expired.example.com', ['create']);
      const now = t.ctx.clock.now();
      // Claimed by a worker whose lease is over already.
      const [job] = await claimJobs(t.ctx.store, 'late-worker', 1, now, Date.now() - 1);
      assert.ok(job);
      const status = async () =>
        (
          await t.ctx.store.db
            .selectFrom('jobs')
            .select('status')
            .where('id', '=', job.id)
            .executeTakeFirstOrThrow()
        ).status;
      for (const [what, lock] of [
        ['service', `select 1 from services where id = $1 for update`],
        ['job', `select 1 from jobs where id = $1 for update`],
      ] as const) {
        const holder = new pg.Client(t.ctx.config.databaseUrl);
        await holder.connect();
        try {
          await holder.query('begin');
          await holder.query(lock, [what === 'service' ? id : job.id]);
          let recovered: number | undefined;
          const recovery = recoverExpiredJobs(t.ctx.store, Date.now(), now, 1000).then((n) => {
            recovered = n;
          });
          assert.equal(
            await waitedForLock(holder, recovery),
            false,
            `the recovery waited for the ${what}'s row`,
          );
          assert.equal(recovered, 0);
          assert.equal(await status(), 'running');
          await holder.query('commit');
        } finally {
          await holder.query('rollback').catch(() => {});
          await holder.end();
        }
      }
      // Nothing held: recovered.
      assert.equal(await recoverExpiredJobs(t.ctx.store, Date.now(), now, 1000), 1);
      assert.equal(await status(), 'queued');
      assert.equal(await activeJob(t, id), null);
    }));
});
