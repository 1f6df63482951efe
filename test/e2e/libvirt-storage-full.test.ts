/**
 * On a real VM, through a server process, the reseller API and the operator API: a host whose
 * storage fills up. The guest's write that its disk has no room for makes QEMU pause it (libvirt:
 * `paused (I/O error)`, the guest none the wiser); the API still shows it running (it holds its
 * memory), the operators are told (`service.paused`), and the reconciler resumes it once the
 * host's pool has room again: the write goes through, and the operators are told it runs
 * (`service.paused_cleared`). A stop while it is paused shuts it off, and it starts again.
 * The test host's pool is a small tmpfs only it sees (scripts/libvirt/test-host.sh,
 * VRP_TEST_HOST_STORAGE_MB), filled by a volume of the test's. Runs where
 * VRP_TEST_LIBVIRT_TEMPLATE names the tiny test template.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { createOperator } from '../../src/auth/operators.ts';
import { OPS } from '../../src/http/base-path.ts';
import { slowWaitMs } from '../helpers/budget.ts';
import { fetchToken } from '../helpers/e2e.ts';
import { guestExecWhenUp, guestReport, guestSpawn, startLibvirtE2eOnTestHost } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const MiB = 2 ** 20;
/** The pool's size: the template's copy, the VM's disk (its 20 GB filesystem's metadata alone ~330 MiB) and seed, and more than the 1 GiB a resume waits for. */
const STORAGE_MB = 2048;

const virsh = (uri: string, ...args: string[]) =>
  execFileSync('virsh', ['-c', uri, ...args], { encoding: 'utf8' }).trim();

test("real VMs: a host's storage full pauses its server; the operators are told; it goes on once there is room; a stop works while paused", {
  skip: noLibvirtTemplate,
  timeout: slowWaitMs(900_000),
}, async () => {
  const s = await startLibvirtE2eOnTestHost(
    'lvfull',
    'lvfull',
    'full.example.com',
    { VRP_RECONCILE_INTERVAL: '1s' },
    { storageMb: STORAGE_MB },
  );
  const deadline = Date.now() + slowWaitMs(800_000);
  const operator = await createOperator(s.store.db, { name: 'storage-ops' }, Date.now());
  const opsToken = await fetchToken(s.server.url, operator);
  const ops = async (path: string) => {
    const res = await fetch(`${s.server.url}${OPS}/${path}`, {
      headers: { authorization: `Bearer ${opsToken}` },
    });
    const json = (await res.json()) as { data: any };
    assert.equal(res.status, 200, JSON.stringify(json));
    return json.data;
  };
  const until = async (what: string, check: () => Promise<boolean> | boolean) => {
    while (Date.now() < deadline) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.fail(`${what} did not happen in time`);
  };
  /** The operators' notifications of paused servers, oldest first. */
  const told = async () =>
    ((await ops('notifications?limit=100')) as { kind: string; summary: string; data: any }[])
      .filter((n) => n.kind.startsWith('service.paused'))
      .reverse();

  const [{ service_id: id }] = await s.api.ok('POST', 'service/create-order', s.order);
  await s.api.ok('POST', `service/${id}/create`);
  await s.api.settled(id, 'running', deadline, 500);
  const domain = `vrp-${id}`;
  await guestReport(id, 1, s.uri);
  await guestExecWhenUp(domain, 'true', s.uri);

  /** A volume of the test's takes all but 16 MiB of the pool's room. */
  const fill = () => {
    virsh(s.uri, 'pool-refresh', 'vrp');
    const available = Number(/^Available:\s+(\d+)/m.exec(virsh(s.uri, 'pool-info', '--bytes', 'vrp'))?.[1]);
    const bytes = String(available - 16 * MiB);
    virsh(s.uri, 'vol-create-as', 'vrp', 'filler', bytes, '--allocation', bytes, '--format', 'raw');
  };
  /** The guest writes 48 MiB to its disk and syncs; then leaves `done` in `/data/<file>.done`. */
  const write = (file: string) =>
    guestSpawn(
      domain,
      `dd if=/dev/urandom of=/data/${file} bs=1M count=48 conv=fsync && echo done > /data/${file}.done && sync`,
      s.uri,
    );
  const pausedOnIoError = () => virsh(s.uri, 'domstate', '--reason', domain) === 'paused (I/O error)';

  // The write its disk has no room for: QEMU pauses the guest.
  fill();
  await write('first');
  await until('the guest to be paused on its write', pausedOnIoError);
  assert.equal(virsh(s.uri, 'domblkerror', domain), 'vda: no space');
  // It holds its memory and cores: running to the reseller.
  assert.equal((await s.api.ok('GET', `service/${id}/status`)).status, 'running');
  await until('the operators to be told', async () => (await told()).length > 0);
  const [paused] = await told();
  assert.equal(paused?.kind, 'service.paused');
  assert.match(
    paused?.summary ?? '',
    /^server full\.example\.com on host \S+ is paused: its disk vda had no room on the host's storage \(it resumes once there is room\)$/,
  );
  assert.equal(paused?.data.service_id, id);
  assert.equal(paused?.data.disk_error, 'no_space');
  // The reconciler that told them saw no room: the guest stays paused.
  assert.ok(pausedOnIoError(), 'not resumed while the pool is full');

  // Room again: resumed, the write goes through, and the operators are told it runs.
  virsh(s.uri, 'vol-delete', 'filler', '--pool', 'vrp');
  await until('the guest to run again', () => virsh(s.uri, 'domstate', domain) === 'running');
  await until(
    'the write to go through',
    async () => (await guestExecWhenUp(domain, 'cat /data/first.done', s.uri)).out.trim() === 'done',
  );
  await until('the operators to be told it runs', async () =>
    (await told()).some((n) => n.kind === 'service.paused_cleared'),
  );
  assert.deepEqual(
    (await told()).map((n) => n.kind),
    ['service.paused', 'service.paused_cleared'],
  );

  // Paused again, and stopped: it shuts off (a paused guest answers no shutdown: resumed for
  // it, paused again by its write, powered off when the stop's time runs out).
  fill();
  await write('second');
  await until('the guest to be paused on its second write', pausedOnIoError);
  await s.api.ok('POST', `service/${id}/stop`);
  await s.api.settled(id, 'stopped', deadline, 500);
  assert.equal(virsh(s.uri, 'domstate', domain), 'shut off');
  virsh(s.uri, 'vol-delete', 'filler', '--pool', 'vrp');
  await s.api.ok('POST', `service/${id}/start`);
  await s.api.settled(id, 'running', deadline, 500);
  await guestReport(id, 2, s.uri);
  assert.equal((await s.api.ok('GET', `service/${id}/status`)).status, 'running');
});
