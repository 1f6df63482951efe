/**
 * Three server processes on one PostgreSQL, 300 orders provisioned concurrently
 * through all three at a non-zero simulated speed, one process kill -9'ed mid-way: every
 * service ends running, each job ran to completion exactly once, no IP allocated twice.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { waitUntil } from '../helpers/budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServers } from '../helpers/server-process.ts';
import { createPgDatabase } from '../helpers/stores.ts';

const SERVICES = 300;

test('three processes on one PostgreSQL share 300 provisionings; one is killed mid-way', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const pgDb = await createPgDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-multi-'));
  const servers: ServerProcess[] = [];
  after(async () => {
    for (const s of servers) await s.kill();
    await pgDb.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = {
    VRP_DATABASE_URL: pgDb.url,
    VRP_DATA_DIR: dataDir,
    VRP_SECRET_KEY: randomBytes(32).toString('hex'),
    // A create takes 1.2 s: the jobs of the first half are still running when the wait below
    // looks for them, even on a loaded machine (at 0.4 s a CI run missed them and waited for
    // running jobs that would never come).
    VRP_SIMULATED_SPEED: '0.15',
    VRP_JOB_LEASE: '2s',
    VRP_WORKER_CONCURRENCY: '8',
    VRP_DATABASE_POOL: '8',
  };
  const { store, app } = await prepareStore(dataDir, pgDb.url);
  // Start all three at once: their start-up migrations must not trip over each other.
  await startServers([env, env, env], servers);
  let alive = [...servers];
  let turn = 0;
  // Requests go round the live processes, as behind a load balancer.
  const api = apiClient(() => alive[turn++ % alive.length]!.url, await fetchToken(servers[0]!.url, app));
  const ids: string[] = [];
  for (let batch = 0; batch < SERVICES / 30; batch++) {
    const created = await Promise.all(
      Array.from({ length: 30 }, async (_, k) => {
        const i = batch * 30 + k;
        const [{ service_id: id }] = await api.ok(
          'POST',
          'service/create-order',
          smallOrder(`m${i}.example.com`),
        );
        await api.ok('POST', `service/${id}/create`);
        return id as string;
      }),
    );
    ids.push(...created);
    if (batch === 4) {
      // Half the orders are in: crash one process while jobs run everywhere.
      // Wait for the workers to have claimed some of them (under load they may not have yet), so
      // the crash leaves jobs running on the killed process for the others to take over.
      await waitUntil(
        'jobs running at the crash',
        async () => {
          const running = await store.db
            .selectFrom('jobs')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('status', '=', 'running')
            .where('locked_by', 'is not', null)
            .executeTakeFirstOrThrow();
          return Number(running.n) > 0;
        },
        { everyMs: 20 },
      );
      await servers[1]!.kill('SIGKILL');
      alive = [servers[0]!, servers[2]!];
    }
  }

  let left = 0;
  await waitUntil(
    'every service to run',
    async () => {
      const notDone = await store.db
        .selectFrom('services')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where((eb) => eb.or([eb('status', '!=', 'running'), eb('pending_jobs', '!=', 0)]))
        .executeTakeFirstOrThrow();
      left = Number(notDone.n);
      return left === 0;
    },
    { everyMs: 250 },
  ).catch((err: Error) => assert.fail(`${err.message}: ${left} services not running yet`));
  const jobs = await store.db.selectFrom('jobs').select(['service_id', 'action', 'status']).execute();
  assert.equal(jobs.length, SERVICES);
  assert.ok(jobs.every((j) => j.action === 'create' && j.status === 'succeeded'));
  assert.equal(
    new Set(jobs.map((j) => j.service_id)).size,
    SERVICES,
    'one job per service: none lost, none doubled',
  );
  const services = await store.db.selectFrom('services').select(['ips']).execute();
  const ips = services.flatMap((s) => JSON.parse(s.ips) as string[]);
  assert.equal(ips.length, SERVICES);
  assert.equal(new Set(ips).size, SERVICES, 'no address given twice');
  const vms = await store.db.selectFrom('sim_vms').select('id').execute();
  assert.deepEqual(vms.map((v) => v.id).sort(), [...ids].sort());
  await store.close();
  for (const s of alive) assert.equal(await s.stop(), 0);
});
