/**
 * kill -9 of the process running a migration, with the VM's destination reserved and the move
 * under way (simulated hypervisor at speed 1: a live move takes 4 s): after a restart the job is
 * run again, finds its reservation, looks at both hosts, and finishes; the VM is on one host,
 * the room counted once on each, the service running with its address.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createOperator } from '../../src/auth/operators.ts';
import { OPS } from '../../src/http/base-path.ts';
import { WAIT_MS, waitUntil } from '../helpers/budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';

test('kill -9 mid-migration: after a restart the move is finished, the VM on one host, the room counted once', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-migrate-crash-'));
  const servers: ServerProcess[] = [];
  const { store, app } = await prepareStore(dataDir);
  after(async () => {
    for (const s of servers) await s.kill();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = {
    VRP_DATA_DIR: dataDir,
    VRP_SIM_HOSTS: 'src:8:16:500:50,dst:8:16:500:50',
    VRP_SIMULATED_SPEED: '1',
    VRP_JOB_LEASE: '2s',
  };
  const first = await startServer(env);
  servers.push(first);
  const api = apiClient(() => first.url, await fetchToken(first.url, app));
  const [{ service_id: id }] = await api.ok('POST', 'service/create-order', smallOrder('moving.example.com'));
  await api.ok('POST', `service/${id}/create`);
  await api.settled(id, 'running', Date.now() + WAIT_MS);
  const { ip } = await api.ok('GET', `service/${id}/details`);
  const vm = () => store.db.selectFrom('sim_vms').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const from = (await vm()).host_id;
  const to = from === 'src' ? 'dst' : 'src';

  const operator = await createOperator(store.db, { name: 'crash-ops' }, Date.now());
  const opsToken = await fetchToken(first.url, operator);
  const asked = await fetch(`${first.url}${OPS}/services/${id}/migrate`, {
    method: 'POST',
    headers: { authorization: `Bearer ${opsToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ host_id: to }),
  });
  assert.equal(asked.status, 200, await asked.text());

  // Killed once the destination is reserved and the move is under way.
  await waitUntil('the move to be under way', async () => (await vm()).migrating_to === to, { everyMs: 20 });
  first.child.kill('SIGSTOP');
  await first.kill('SIGKILL');
  const hosts = async () =>
    Object.fromEntries(
      (await store.db.selectFrom('hypervisor_hosts').select(['id', 'used_cpu']).execute()).map((h) => [
        h.id,
        h.used_cpu,
      ]),
    );
  assert.deepEqual(await hosts(), { [from]: 1, [to]: 1 }, 'killed with the room reserved on both');

  const second = await startServer(env);
  servers.push(second);
  const job = () =>
    store.db
      .selectFrom('jobs')
      .selectAll()
      .where('service_id', '=', id)
      .where('action', '=', 'migrate')
      .executeTakeFirstOrThrow();
  await waitUntil(
    'the migration to finish after the restart',
    async () => (await job()).status === 'succeeded',
    {
      everyMs: 200,
    },
  ).catch((err: Error) => assert.fail(`${err.message}:\n${second.output()}`));
  const moved = await vm();
  assert.equal(moved.host_id, to);
  assert.equal(moved.migrating_to, null);
  assert.equal(moved.power, 'running');
  assert.deepEqual(await hosts(), { [from]: 0, [to]: 1 }, 'the room counted once, on the destination');
  const api2 = apiClient(() => second.url, await fetchToken(second.url, app));
  await api2.settled(id, 'running', Date.now() + WAIT_MS);
  assert.equal((await api2.ok('GET', `service/${id}/details`)).ip, ip);
  assert.equal((await job()).attempts, 2, 'run again once, after the crash');
});
