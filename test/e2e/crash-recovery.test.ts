/**
 * Issue: "start the server, order and provision 200 services at a non-zero simulated speed,
 * kill -9 it mid-way, start it again, and assert every service ends running, no job is lost
 * or completed twice, no IP is given twice."
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { JobStatus } from '../../src/store/schema.ts';
import { waitUntil } from '../helpers/budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';

const SERVICES = 200;

test('kill -9 while 200 services provision: after a restart all run, no job lost or run twice, no IP twice', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-crash-'));
  const servers: ServerProcess[] = [];
  const { store, app } = await prepareStore(dataDir);
  after(async () => {
    for (const s of servers) await s.kill();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = {
    VRP_DATA_DIR: dataDir,
    // A create takes 0.8 s (8 s at speed 1): the 200 take the 16 workers about 10 s, a window
    // wide enough for the wait below to see some done and others running even on a loaded
    // machine (at 0.2 s it was 2.5 s, and a CI run whose test process was starved that long
    // saw only the end); those left run in about as long again after the restart.
    VRP_SIMULATED_SPEED: '0.1',
    VRP_JOB_LEASE: '2s',
    VRP_WORKER_CONCURRENCY: '16',
  };
  const first = await startServer(env);
  servers.push(first);
  const api = apiClient(() => first.url, await fetchToken(first.url, app));

  // All ordered first, then all sent to provisioning at once: ordering and provisioning side by
  // side, a busy machine's worker kept pace with the orders and had nothing left to run.
  const ids: string[] = [];
  for (let batch = 0; batch < SERVICES / 20; batch++) {
    const ordered = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const [{ service_id: id }] = await api.ok(
          'POST',
          'service/create-order',
          smallOrder(`s${batch * 20 + i}.example.com`),
        );
        return id as string;
      }),
    );
    ids.push(...ordered);
  }
  for (let batch = 0; batch < SERVICES / 50; batch++) {
    await Promise.all(
      ids.slice(batch * 50, batch * 50 + 50).map((id) => api.ok('POST', `service/${id}/create`)),
    );
  }

  // Let some provision, then crash in the middle of the rest.
  const count = async (status: JobStatus) =>
    Number(
      (
        await store.db
          .selectFrom('jobs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('status', '=', status)
          .executeTakeFirstOrThrow()
      ).n,
    );
  // Some provisioned and others under way, seen together: on a loaded machine a wait for a count
  // of provisioned services alone once saw it only after the last job had ended (CI rehearsal,
  // load 8 on 2 cores), leaving nothing for the kill to interrupt.
  await waitUntil(
    'a tenth of the services to be provisioned while others run',
    async () => (await count('succeeded')) >= SERVICES / 10 && (await count('running')) > 0,
    {
      everyMs: 20,
    },
  );
  // Frozen first, so that what is counted is what the kill interrupts.
  first.child.kill('SIGSTOP');
  assert.ok((await count('running')) > 0, 'jobs were running when the process was killed');
  await first.kill('SIGKILL');

  const second = await startServer(env);
  servers.push(second);
  let left = 0;
  await waitUntil(
    'every service to run after the restart',
    async () => {
      const notRunning = await store.db
        .selectFrom('services')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '!=', 'running')
        .executeTakeFirstOrThrow();
      left = Number(notRunning.n);
      return left === 0;
    },
    { everyMs: 200 },
  ).catch((err: Error) => assert.fail(`${err.message}: ${left} are not running yet:\n${second.output()}`));

  const services = await store.db
    .selectFrom('services')
    .select(['id', 'status', 'ips', 'pending_jobs'])
    .execute();
  assert.equal(services.length, SERVICES);
  assert.ok(services.every((s) => s.status === 'running' && s.pending_jobs === 0));
  const jobs = await store.db.selectFrom('jobs').select(['service_id', 'action', 'status']).execute();
  assert.equal(jobs.length, SERVICES, 'one create job per service, none lost, none added');
  assert.ok(jobs.every((j) => j.action === 'create' && j.status === 'succeeded'));
  assert.equal(new Set(jobs.map((j) => j.service_id)).size, SERVICES);
  const ips = services.flatMap((s) => JSON.parse(s.ips) as string[]);
  assert.equal(ips.length, SERVICES);
  assert.equal(new Set(ips).size, ips.length, 'no address given twice');
  // The hypervisor holds exactly one VM per service, and the pool agrees with the services.
  const vms = await store.db.selectFrom('sim_vms').select('id').execute();
  assert.deepEqual(vms.map((v) => v.id).sort(), [...ids].sort());
  const held = await store.db
    .selectFrom('ip_addresses')
    .select('address')
    .where('vm_id', 'is not', null)
    .execute();
  assert.deepEqual(held.map((h) => h.address).sort(), [...ips].sort());
  assert.equal(await second.stop(), 0, 'graceful shutdown exits 0');
});
