/**
 * The feed pages by the order events were committed in. PostgreSQL hands out sequence values
 * before commit, so without care an event of a transaction that commits late would appear
 * behind a cursor that has already passed it, and a reseller paging the feed would never see it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { ensureReseller } from '../../src/auth/applications.ts';
import type { NewEvent } from '../../src/domain/events.ts';
import { listEvents, recordEvents } from '../../src/store/repos/events.ts';
import { createTestApp } from '../helpers/app.ts';
import { until } from '../helpers/job-worker.ts';
import { lockWaiters } from '../helpers/pg-lock-waits.ts';

const finished = (job: string): NewEvent => ({
  type: 'job.finished',
  data: { job_id: job, service_id: 's', action: 'stop', status: 'succeeded', error: null },
});

test('PostgreSQL: events take their place in the feed when they commit, so a cursor never passes one still to come', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const t = await createTestApp({}, { store: 'postgres', demo: false });
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  try {
    const db = t.ctx.store.db;
    const acme = (await ensureReseller(db, 'acme', Date.now())).id;
    // The first transaction records its event (taking the lower identity value), then waits
    // before committing.
    let recorded!: () => void;
    const first = new Promise<void>((r) => {
      recorded = r;
    });
    const slow = db.transaction().execute(async (tx) => {
      await recordEvents(tx, acme, [finished('first')], Date.now());
      recorded();
      await held;
    });
    await first;
    // A second transaction of the same reseller is not held up by it: it records and commits.
    await db.transaction().execute((tx) => recordEvents(tx, acme, [finished('second')], Date.now()));
    const seen = (await listEvents(db, acme, undefined, 10))!;
    assert.deepEqual(
      seen.map((e) => JSON.parse(e.data).job_id),
      ['second'],
    );
    // A reader holds the cursor `second`; the first commits now, and is found after the cursor.
    release();
    await slow;
    const next = (await listEvents(db, acme, seen[0]!.id, 10))!;
    assert.deepEqual(
      next.map((e) => JSON.parse(e.data).job_id),
      ['first'],
    );
    assert.deepEqual(
      (await listEvents(db, acme, undefined, 10))!.map((e) => JSON.parse(e.data).job_id),
      ['second', 'first'],
      'the feed is in commit order',
    );
  } finally {
    release(); // a failed check must not leave the first transaction open
    await t.close();
  }
});

test("PostgreSQL: concurrent transactions of two resellers: each feed in commit order, each transaction's events together", {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const t = await createTestApp({}, { store: 'postgres', demo: false });
  try {
    const db = t.ctx.store.db;
    const acme = (await ensureReseller(db, 'acme', Date.now())).id;
    const globex = (await ensureReseller(db, 'globex', Date.now())).id;
    // 200 transactions of two resellers at once, each recording two events: every reseller's
    // feed is in strictly increasing seq, each transaction's two events next to each other.
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        db
          .transaction()
          .execute((tx) =>
            recordEvents(tx, i % 2 ? acme : globex, [finished(`${i}a`), finished(`${i}b`)], Date.now()),
          ),
      ),
    );
    for (const reseller of [acme, globex]) {
      const rows = await db
        .selectFrom('events')
        .select(['seq', 'data'])
        .where('reseller_id', '=', reseller)
        .orderBy('seq')
        .execute();
      assert.equal(rows.length, 200);
      for (let i = 0; i < rows.length; i += 2) {
        const a = JSON.parse(rows[i]!.data).job_id as string;
        assert.match(a, /a$/);
        assert.equal(JSON.parse(rows[i + 1]!.data).job_id, a.replace(/a$/, 'b'));
      }
    }
    // Renumbered at commit: no transaction left a lock behind. (Only this test's database: the
    // cluster is shared with the other test files running at the same time.)
    const locks = await sql<{ n: number }>`select count(*)::int as n from pg_locks
      where locktype = 'advisory'
        and database = (select oid from pg_database where datname = current_database())`.execute(db);
    assert.equal(locks.rows[0]!.n, 0);
  } finally {
    await t.close();
  }
});

test("PostgreSQL: transactions with several resellers' events, recorded in opposite orders, both commit (no deadlock)", {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const t = await createTestApp({}, { store: 'postgres', demo: false });
  // Holds the third reseller's event lock (the key migration 014's trigger takes) while both
  // transactions reach their commits, so that each has taken what it takes before it.
  const barrier = new pg.Client(t.ctx.config.databaseUrl);
  await barrier.connect();
  try {
    const db = t.ctx.store.db;
    const [a, b, c] = await Promise.all(
      ['acme', 'globex', 'initech'].map(async (name) => (await ensureReseller(db, name, Date.now())).id),
    );
    await barrier.query('select pg_advisory_lock(1987211365, hashtext($1))', [c]);
    // A transaction group's job ends of several resellers record their events in the order
    // the jobs ended: here one records a, c, b and the other b, c, a.
    const inOrder = (order: string[], tag: string) =>
      db.transaction().execute(async (tx) => {
        for (const r of order) await recordEvents(tx, r, [finished(`${tag}-${r}`)], Date.now());
      });
    const both = Promise.allSettled([inOrder([a!, c!, b!], 'one'), inOrder([b!, c!, a!], 'two')]);
    await until(async () => (await lockWaiters(barrier)) >= 2, 'both commits to wait for a lock');
    await barrier.query('select pg_advisory_unlock(1987211365, hashtext($1))', [c]);
    const [one, two] = await both;
    assert.equal(one.status, 'fulfilled', one.status === 'rejected' ? String(one.reason) : '');
    assert.equal(two.status, 'fulfilled', two.status === 'rejected' ? String(two.reason) : '');
    for (const r of [a!, b!, c!]) {
      const feed = (await listEvents(db, r, undefined, 10))!.map((e) => JSON.parse(e.data).job_id).sort();
      assert.deepEqual(feed, [`one-${r}`, `two-${r}`]);
    }
  } finally {
    await barrier.end();
    await t.close();
  }
});
