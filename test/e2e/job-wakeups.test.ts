/**
 * On PostgreSQL a worker in another process wakes when a job is queued (LISTEN/NOTIFY),
 * instead of at its next poll, and keeps doing so after PostgreSQL restarts. The worker here
 * polls only after twice the tests' wait budget: a job that runs while the test still waits
 * was woken for.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { type PostgresServer, startPostgres } from '../../scripts/postgres.ts';
import { WAIT_MS, waitUntil } from '../helpers/budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import {
  type ServerProcess,
  startServer,
  startWorker,
  type WorkerProcess,
} from '../helpers/server-process.ts';

test('PostgreSQL: a worker process wakes for jobs an API process queues, also after PostgreSQL restarts', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const postgres: PostgresServer = await startPostgres();
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-wakeups-'));
  let api: ServerProcess | undefined;
  let worker: WorkerProcess | undefined;
  after(async () => {
    await api?.kill();
    await worker?.stop('SIGKILL');
    postgres.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { store, app } = await prepareStore(dataDir, postgres.url);
  await store.close();
  const env = {
    VRP_DATABASE_URL: postgres.url,
    VRP_DATA_DIR: dataDir,
    VRP_SECRET_KEY: randomBytes(32).toString('hex'),
    VRP_SIMULATED_SPEED: '0',
    VRP_WORKER_POLL: `${2 * WAIT_MS}ms`,
    VRP_LOG_LEVEL: 'info',
  };
  api = await startServer({ ...env, VRP_ROLE: 'api' });
  worker = startWorker(env);
  const workerLog = worker.output;
  const client = apiClient(() => api!.url, await fetchToken(api.url, app));
  // The worker listens before the job is queued: a notification sent earlier would reach nobody.
  /** A failed wait names what the worker logged. */
  const withLog = (err: Error) => assert.fail(`${err.message}; the worker logged:\n${workerLog()}`);
  await waitUntil('the worker to start', () => workerLog().includes('worker-only process')).catch(withLog);
  const db = new pg.Client({ connectionString: postgres.url });
  await db.connect();
  try {
    await waitUntil('the worker to listen for queued jobs', async () => {
      const r = await db.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where query = 'listen vrp_jobs'`,
      );
      return r.rows[0]!.n === 1;
    });
  } finally {
    await db.end();
  }

  /** Orders and provisions a service, and waits until it runs. */
  const provision = async (domain: string) => {
    const [{ service_id: id }] = await client.ok('POST', 'service/create-order', smallOrder(domain));
    await client.ok('POST', `service/${id}/create`);
    let last: unknown;
    await waitUntil(
      `${domain} to run (woken for, not polled: the poll comes after the wait budget)`,
      async () => {
        const r = await client.call('GET', `service/${id}/status`, {});
        last = r.body;
        return r.status === 200 && r.body.data.status === 'running';
      },
    ).catch((err: Error) => assert.fail(`${err.message}; last: ${JSON.stringify(last)}`));
  };
  await provision('wake1.example.com');

  // PostgreSQL restarts: the worker's listening connection is lost and made again.
  await postgres.restart(1000);
  await waitUntil('readyz to recover', async () => (await fetch(`${api.url}/readyz`)).status === 200, {
    everyMs: 100,
  });
  await waitUntil('the worker to listen again', () =>
    workerLog().includes('job notifications: listening again'),
  ).catch(withLog);
  await provision('wake2.example.com');
  assert.equal(worker.child.exitCode, null, 'the worker did not crash');
});
