/**
 * On real VMs, through a server process and the operator API alone: a fleet of two libvirt hosts
 * that share no storage (test hosts, scripts/libvirt/test-host.sh). A running server migrates
 * live to the other host and keeps its addresses; a host whose daemon stops answering becomes
 * `unreachable`, its service's job waits in the queue (attempts untouched) and runs once the
 * host answers again; the stopped server migrates back cold and starts there. One VM, to spare
 * the shared cores. Runs where VRP_TEST_LIBVIRT_TEMPLATE names the tiny test template.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createOperator } from '../../src/auth/operators.ts';
import { OPS } from '../../src/http/base-path.ts';
import { slowWaitMs } from '../helpers/budget.ts';
import { fetchToken } from '../helpers/e2e.ts';
import { startLibvirtE2e, startTestHost } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const virsh = (uri: string, ...args: string[]) =>
  execFileSync('virsh', ['-c', uri, ...args], { encoding: 'utf8' }).trim();

test('real VMs: live migration, an unreachable host coming back, a cold migration back', {
  skip: noLibvirtTemplate,
  timeout: slowWaitMs(1_200_000),
}, async () => {
  const [a, b] = [await startTestHost('fleet-a'), await startTestHost('fleet-b')];
  after(async () => {
    await a.stop();
    await b.stop();
  });
  const { server, api, order, store } = await startLibvirtE2e('lvfleet', 'fleet.example.com', {
    VRP_LIBVIRT_HOSTS: `fleet-a,${a.uri},2,4,20;fleet-b,${b.uri},2,4,20`,
    VRP_HOST_CHECK_INTERVAL: '500ms',
    VRP_HOST_DOWN_AFTER: '3s',
  });
  const deadline = Date.now() + slowWaitMs(1_100_000);
  const operator = await createOperator(store.db, { name: 'fleet-ops' }, Date.now());
  const opsToken = await fetchToken(server.url, operator);
  const ops = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${OPS}/${path}`, {
      method,
      headers: { authorization: `Bearer ${opsToken}`, 'content-type': 'application/json' },
      body: method === 'GET' ? undefined : JSON.stringify(body ?? {}),
    });
    const json = (await res.json()) as { data: any; error_code?: string };
    assert.equal(res.status, 200, JSON.stringify(json));
    return json.data;
  };
  const until = async (what: string, check: () => Promise<boolean>) => {
    while (Date.now() < deadline) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.fail(`${what} did not happen in time`);
  };
  const hostOf = async (id: string) => (await ops('GET', `services/${id}`)).host?.host_id;

  const [{ service_id: id }] = await api.ok('POST', 'service/create-order', order);
  await api.ok('POST', `service/${id}/create`);
  await api.settled(id, 'running', deadline, 500);
  const domain = `vrp-${id}`;
  const first = await hostOf(id);
  const [from, to] = first === 'fleet-a' ? [a, b] : [b, a];
  const toId = first === 'fleet-a' ? 'fleet-b' : 'fleet-a';
  const ip = (await api.ok('GET', `service/${id}/details`)).ip;
  assert.equal(virsh(from.uri, 'domstate', domain), 'running');

  // Live: it keeps running, on the other host, with its address; nothing of it left behind.
  await ops('POST', `services/${id}/migrate`, { host_id: toId });
  await until('the live migration', async () => (await hostOf(id)) === toId);
  await api.settled(id, 'running', deadline, 500);
  assert.equal(virsh(to.uri, 'domstate', domain), 'running', 'running on the destination');
  assert.doesNotMatch(virsh(from.uri, 'list', '--all', '--name'), new RegExp(domain), 'gone from the source');
  assert.doesNotMatch(virsh(from.uri, 'vol-list', 'vrp'), new RegExp(id), "the source's volumes removed");
  assert.match(
    virsh(to.uri, 'vol-list', 'vrp'),
    new RegExp(`${id}\\.qcow2`),
    'its disk in the destination pool',
  );
  assert.equal((await api.ok('GET', `service/${id}/details`)).ip, ip, 'the same address');

  // The destination's daemon stops answering (SIGSTOP: its VMs run on): unreachable after
  // VRP_HOST_DOWN_AFTER; a stop asked for meanwhile waits, then runs once it answers again.
  const pid = Number(readFileSync(join(to.dir, 'libvirtd.pid'), 'utf8').trim());
  process.kill(pid, 'SIGSTOP');
  try {
    await until(
      'the host to be unreachable',
      async () => (await ops('GET', `hosts/${toId}`)).health === 'unreachable',
    );
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`^vrp_host_up\\{host="${toId}"\\} 0$`, 'm'));
    await api.ok('POST', `service/${id}/stop`);
    const jobs = async () =>
      (
        (await api.ok('GET', `service/${id}/jobs`)) as { action: string; status: string; attempts: number }[]
      ).find((j) => j.action === 'stop');
    await until('the stop to be looked at', async () =>
      (await ops('GET', `jobs?limit=100`)).items.some(
        (j: { action: string; error: string | null }) => j.action === 'stop' && /host/i.test(j.error ?? ''),
      ),
    );
    // The worker looks at a waiting job again every probe interval (it claims it, finds the host
    // still unreachable and puts it back): a reading can fall in that moment and see it running.
    // Over several looks it is never failed, and between them it waits in the queue with its
    // attempts given back. Each reading is checked as it is made, so a failed job fails the test
    // at once, not when the wait runs out.
    let waiting = 0;
    await until('the stop to wait in the queue, its attempts untouched', async () => {
      const job = await jobs();
      assert.ok(job?.status === 'queued' || job?.status === 'running', `the job waits, not ${job?.status}`);
      assert.ok(job.attempts <= 1, 'no attempt used up while it waits');
      if (job.status === 'queued' && job.attempts === 0) waiting++;
      return waiting >= 3;
    });
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  await until('the host to answer again', async () => (await ops('GET', `hosts/${toId}`)).health === 'up');
  await api.settled(id, 'stopped', deadline, 500);
  const audit = (await ops('GET', 'audit?limit=1000')).items.map((e: { action: string }) => e.action);
  for (const action of ['service.migrate', 'host.unreachable', 'host.reachable'])
    assert.ok(audit.includes(action), `the audit log has ${action}`);

  // Cold, back to the first host, and it starts there.
  await ops('POST', `services/${id}/migrate`, { host_id: first });
  await until('the cold migration', async () => (await hostOf(id)) === first);
  await api.settled(id, 'stopped', deadline, 500);
  await api.ok('POST', `service/${id}/start`);
  await api.settled(id, 'running', deadline, 500);
  assert.equal(virsh(from.uri, 'domstate', domain), 'running');
  assert.doesNotMatch(virsh(to.uri, 'list', '--all', '--name'), new RegExp(domain));
  await api.ok('POST', `service/${id}/terminate`);
  await api.settled(id, 'terminated', deadline, 500);
});
