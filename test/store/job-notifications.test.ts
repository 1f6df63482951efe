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
  // Every notification the listener's connection receives, in order: whether it was this
  // process's own (and so not passed on).
  const received: boolean[] = [];
  const log = { ...quiet, debug: ({ own }: { own: boolean }) => void received.push(own) };
  const listening = here.ctx.store.listenForQueuedJobs!(() => heard++, log);
  const db = here.ctx.store.db;
  const listeners = async () => {
    const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and query = 'listen vrp_jobs'`.execute(db);
    return r.rows[0]!.n;
  };
  try {
    await until(async () => (await listeners()) === 1, 'the listener to listen');
    const token = await here.token({ reseller: 'acme' });
    await orderAndCreate(here, token, 'own.example.com');
    // The channel's notification of its own job reaches the listener's connection.
    await until(() => received.length > 0, 'the notification of its own job');
    assert.deepEqual(received, [true]);
    assert.equal(heard, 0, 'not told of its own job');

    await orderAndCreate(there, await there.token({ reseller: 'acme' }), 'other.example.com');
    await until(() => received.length > 1, "the notification of the other process's job");
    assert.deepEqual(received, [true, false]);
    assert.equal(heard, 1, "told of the other process's job");

    await listening.close();
    // Its connection is gone: a notification sent from now on has nobody to reach here.
    await until(async () => (await listeners()) === 0, 'the listening connection to end');
    await orderAndCreate(there, await there.token({ reseller: 'acme' }), 'later.example.com');
    assert.deepEqual(received, [true, false], 'nothing received after close');
    assert.equal(heard, 1, 'nothing heard after close');
  } finally {
    await listening.close();
    await there.close();
    await here.close();
  }
});
