/**
 * PostgreSQL: several resellers' services ordered and operated at once through an API process,
 * their jobs run by two worker processes with short leases (renewed every second): every job
 * succeeds, and PostgreSQL detects no deadlock in the store's database. Before, the worker's
 * lease renewal met a group of job ends crosswise, and two groups of job ends with events of
 * several resellers took the resellers' event locks in opposite orders: both deadlocks,
 * which PostgreSQL broke after a second each by failing one side (bench/FINDINGS.md,
 * twenty-fourth session).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { ensureReseller, registerApplication } from '../../src/auth/applications.ts';
import { waitUntil } from '../helpers/budget.ts';
import { API, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import {
  type ServerProcess,
  startServer,
  startWorker,
  type WorkerProcess,
} from '../helpers/server-process.ts';
import { createPgDatabase } from '../helpers/stores.ts';

const RESELLERS = ['acme', 'globex', 'initech'];
/** Services per reseller, and how many of a reseller's are ordered at once. */
const SERVICES = 40;
const AT_ONCE = 8;

test('PostgreSQL: three resellers, an API and two worker processes: every job succeeds, no deadlock', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const pgDb = await createPgDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-deadlocks-'));
  let api: ServerProcess | undefined;
  const workers: WorkerProcess[] = [];
  const workerLog = () => workers.map((w) => w.output()).join('');
  after(async () => {
    await api?.kill();
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await pgDb.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { store, app } = await prepareStore(dataDir, pgDb.url);
  const apps = [app];
  for (const name of RESELLERS.slice(1)) {
    await ensureReseller(store.db, name, Date.now());
    apps.push(await registerApplication(store.db, { reseller: name }, Date.now()));
  }
  await store.close();
  const env = {
    VRP_DATABASE_URL: pgDb.url,
    VRP_DATA_DIR: dataDir,
    VRP_SECRET_KEY: randomBytes(32).toString('hex'),
    VRP_SIMULATED_SPEED: '0',
    // Renewed every second: the renewals meet the groups of job ends often.
    VRP_JOB_LEASE: '3s',
    VRP_WORKER_CONCURRENCY: '32',
  };
  api = await startServer({ ...env, VRP_ROLE: 'api' });
  workers.push(startWorker(env), startWorker(env));

  // Each reseller orders its services, a few at a time, and asks for a create, a stop, a start
  // and a restart of each: jobs of all three resellers end in the same moments.
  const ops = ['create', 'stop', 'start', 'restart'];
  const ids: string[] = [];
  // Plain requests (no check of each answer against the document, which would slow the client
  // down below the load that makes jobs of several resellers end together).
  const post = async (token: string, path: string, body?: unknown) => {
    const res = await fetch(`${api!.url}${API}/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? '' : JSON.stringify(body),
    });
    const text = await res.text();
    assert.equal(res.status, 200, `${path}: ${text}`);
    return JSON.parse(text);
  };
  await Promise.all(
    apps.map(async (a, r) => {
      const token = await fetchToken(api!.url, a);
      let next = 0;
      await Promise.all(
        Array.from({ length: AT_ONCE }, async () => {
          while (next < SERVICES) {
            const n = next++;
            const order = await post(
              token,
              'service/create-order',
              smallOrder(`s${n}.${RESELLERS[r]}.example.com`),
            );
            const id: string = order.data[0].service_id;
            ids.push(id);
            for (const op of ops) await post(token, `service/${id}/${op}`);
          }
        }),
      );
    }),
  );
  assert.equal(ids.length, RESELLERS.length * SERVICES);

  const db = new pg.Client(pgDb.url);
  await db.connect();
  try {
    const count = async (sql: string) => Number((await db.query<{ n: string }>(sql)).rows[0]!.n);
    await waitUntil(
      'every job to end',
      async () => (await count(`select count(*) as n from jobs where status in ('queued', 'running')`)) === 0,
    ).catch((err: Error) => assert.fail(`${err.message}; the workers logged:\n${workerLog()}`));
    const jobs = await db.query<{ status: string; n: string }>(
      'select status, count(*) as n from jobs group by status',
    );
    assert.deepEqual(
      jobs.rows.map((j) => [j.status, Number(j.n)]),
      [['succeeded', ids.length * ops.length]],
    );
    assert.equal(await count(`select count(*) as n from services where status = 'running'`), ids.length);

    // A backend reports what it counted to the statistics at the latest when it exits: the
    // processes stop, and their connections' backends with them.
    await Promise.all(workers.map((w) => w.stop()));
    await api.stop();
    await waitUntil(
      'the servers’ connections to close',
      async () =>
        (await count(
          'select count(*) as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
        )) === 0,
    );
    await db.query('select pg_stat_clear_snapshot()');
    assert.equal(
      await count('select deadlocks as n from pg_stat_database where datname = current_database()'),
      0,
      `PostgreSQL detected deadlocks; the workers logged:\n${workerLog()}`,
    );
  } finally {
    await db.end();
  }
});
