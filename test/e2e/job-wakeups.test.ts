/**
 * On PostgreSQL a worker in another process wakes when a job is queued (LISTEN/NOTIFY),
 * instead of at its next poll, and keeps doing so after PostgreSQL restarts. The worker here
 * polls once a minute: a job that runs within seconds was woken for.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type PostgresServer, startPostgres } from '../../scripts/postgres.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';

test('PostgreSQL: a worker process wakes for jobs an API process queues, also after PostgreSQL restarts', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const pg: PostgresServer = await startPostgres();
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-wakeups-'));
  let api: ServerProcess | undefined;
  let worker: ChildProcess | undefined;
  let workerLog = '';
  after(async () => {
    await api?.kill();
    if (worker && worker.exitCode === null) {
      worker.kill('SIGKILL');
      await new Promise((r) => worker!.once('exit', r));
    }
    pg.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { store, app } = await prepareStore(dataDir, pg.url);
  await store.close();
  const env = {
    VRP_DATABASE_URL: pg.url,
    VRP_DATA_DIR: dataDir,
    VRP_SECRET_KEY: randomBytes(32).toString('hex'),
    VRP_SIMULATED_SPEED: '0',
    VRP_WORKER_POLL: '60s',
    VRP_LOG_LEVEL: 'info',
  };
  api = await startServer({ ...env, VRP_ROLE: 'api' });
  worker = spawn(process.execPath, ['src/main.ts'], {
    env: { ...process.env, ...env, VRP_ROLE: 'worker' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  worker.stdout!.on('data', (d) => {
    workerLog += String(d);
  });
  worker.stderr!.on('data', (d) => {
    workerLog += String(d);
  });
  const client = apiClient(() => api!.url, await fetchToken(api.url, app));
  // The worker has started (and made its first, empty, claim) before the job is queued.
  const started = Date.now() + 20_000;
  while (!workerLog.includes('worker-only process')) {
    assert.ok(Date.now() < started, `the worker did not start: ${workerLog}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 500));

  /** Orders and provisions a service; how long until it runs, in ms (fails past 15 s). */
  const provision = async (domain: string) => {
    const t0 = Date.now();
    const [{ service_id: id }] = await client.ok('POST', 'service/create-order', smallOrder(domain));
    await client.ok('POST', `service/${id}/create`);
    for (;;) {
      const r = await client.call('GET', `service/${id}/status`, {});
      if (r.status === 200 && r.body.data.status === 'running') return Date.now() - t0;
      assert.ok(Date.now() - t0 < 15_000, `not running after 15 s: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 50));
    }
  };
  const first = await provision('wake1.example.com');
  assert.ok(first < 5000, `running after ${first} ms`);

  // PostgreSQL restarts: the worker's listening connection is lost and made again.
  await pg.restart(1000);
  const ready = Date.now() + 30_000;
  while ((await fetch(`${api.url}/readyz`)).status !== 200) {
    assert.ok(Date.now() < ready, 'readyz did not recover');
    await new Promise((r) => setTimeout(r, 100));
  }
  const relisten = Date.now() + 30_000;
  while (!workerLog.includes('job notifications: listening again')) {
    assert.ok(Date.now() < relisten, `the worker did not listen again: ${workerLog}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const second = await provision('wake2.example.com');
  assert.ok(second < 5000, `running after ${second} ms`);
  assert.equal(worker.exitCode, null, 'the worker did not crash');
});
