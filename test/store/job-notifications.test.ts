/**
 * PostgreSQL tells a process that another process queued a job (migration 015's
 * trigger, src/store/job-notifications.ts); a process is not told about its own jobs, which
 * wake its worker without a round trip.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'kysely';
import { call, createTestApp, type TestApp } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { until } from '../helpers/job-worker.ts';

const quiet = { warn() {}, info() {} };
const B = { 'x-envelope-variant': 'B' };

async function orderAndCreate(t: TestApp, token: string, domain: string): Promise<void> {
  const o = await call(t, token, 'POST', 'service/create-order', smallOrder(domain), B);
  assert.equal(o.status, 200, JSON.stringify(o.body));
  const c = await call(t, token, 'POST', `service/${o.body.data[0].service_id}/create`, undefined, B);
  assert.equal(c.status, 200, JSON.stringify(c.body));
}

test('PostgreSQL: a process hears of jobs other processes queue, not of its own, until it stops listening', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const key = randomBytes(32).toString('hex');
  const here = await createTestApp({ VRP_SECRET_KEY: key }, { store: 'postgres' });
  // Another process on the same database: an app of its own, with its own connections.
  const there = await createTestApp({ VRP_SECRET_KEY: key, VRP_DATABASE_URL: here.ctx.config.databaseUrl! });
  let heard = 0;
  const listening = here.ctx.store.listenForQueuedJobs!(() => heard++, quiet);
  try {
    const db = here.ctx.store.db;
    await until(async () => {
      const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and query = 'listen vrp_jobs'`.execute(db);
      return r.rows[0]!.n === 1;
    }, 'the listener to listen');
    const token = await here.token({ reseller: 'acme' });
    await orderAndCreate(here, token, 'own.example.com');
    // Its own job is committed; a notification, had it been sent to this process, takes a few ms.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(heard, 0, 'not told of its own job');

    await orderAndCreate(there, await there.token({ reseller: 'acme' }), 'other.example.com');
    await until(() => heard === 1, "the other process's job to be heard of");

    await listening.close();
    await orderAndCreate(there, await there.token({ reseller: 'acme' }), 'later.example.com');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(heard, 1, 'nothing heard after close');
  } finally {
    await listening.close();
    await there.close();
    await here.close();
  }
});
