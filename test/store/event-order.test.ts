/**
 * The feed pages by the order events were committed in. PostgreSQL hands out sequence values
 * before commit, so without care an event of a transaction that commits late would appear
 * behind a cursor that has already passed it, and a reseller paging the feed would never see it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { ensureReseller } from '../../src/auth/applications.ts';
import type { NewEvent } from '../../src/domain/events.ts';
import { listEvents, recordEvents } from '../../src/store/repos/events.ts';
import { createTestApp } from '../helpers/app.ts';
import { until } from '../helpers/job-worker.ts';

const finished = (job: string): NewEvent => ({
  type: 'job.finished',
  data: { job_id: job, service_id: 's', action: 'stop', status: 'succeeded', error: null },
});

test('PostgreSQL: a transaction that records events commits before the next one of the reseller records its own', {
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
    const globex = (await ensureReseller(db, 'globex', Date.now())).id;
    // The first transaction records its event, then waits before committing.
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
    let secondDone = false;
    const fast = db
      .transaction()
      .execute((tx) => recordEvents(tx, acme, [finished('second')], Date.now()))
      .then(() => {
        secondDone = true;
      });
    // The second waits for the first (its advisory lock), while another reseller's does not.
    await until(async () => {
      const r = await sql<{ n: number }>`select count(*)::int as n from pg_locks
        where locktype = 'advisory' and not granted`.execute(db);
      return r.rows[0]!.n === 1;
    }, 'the second transaction to wait');
    await db.transaction().execute((tx) => recordEvents(tx, globex, [finished('other')], Date.now()));
    assert.equal(secondDone, false);
    assert.deepEqual(await listEvents(db, acme, undefined, 10), [], 'nothing committed yet');
    release();
    await slow;
    await fast;
    const events = (await listEvents(db, acme, undefined, 10))!;
    assert.deepEqual(
      events.map((e) => JSON.parse(e.data).job_id),
      ['first', 'second'],
    );
    assert.deepEqual(await listEvents(db, acme, events[0]!.id, 10), [events[1]]);
  } finally {
    release(); // a failed check must not leave the first transaction open
    await t.close();
  }
});
