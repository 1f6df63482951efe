/**
 * A create whose libvirt cannot be reached, through a real server
 * process with VRP_DRIVER=libvirt. Real virsh and qemu-img (no VM is started): the host's URI
 * names a socket where no libvirtd listens, which virsh reports as "failed to connect" (transient).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { WAIT_MS } from '../helpers/budget.ts';
import { apiClient, fetchToken, smallOrder } from '../helpers/e2e.ts';
import { hasCommand, prepareLibvirtE2e } from '../helpers/libvirt.ts';
import { startServer } from '../helpers/server-process.ts';

test('a create that runs out of attempts gives everything back and its details are logged', {
  skip: !(hasCommand('virsh') && hasCommand('qemu-img')) && 'needs virsh and qemu-img',
  timeout: 2 * WAIT_MS,
}, async () => {
  const { dataDir, storage, store, app, serve } = await prepareLibvirtE2e('lvdown');
  const image = join(dataDir, 'base.qcow2');
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', image, '1G']);
  const order = smallOrder('down.example.com');
  await store.db.updateTable('os_templates').set({ image }).where('id', '=', order.template_id).execute();
  const uri = `qemu+unix:///system?socket=${join(dataDir, 'no-libvirtd.sock')}`;
  const server = serve(
    await startServer({
      VRP_DATA_DIR: dataDir,
      VRP_DRIVER: 'libvirt',
      VRP_LIBVIRT_URI: uri,
      VRP_LIBVIRT_STORAGE: storage,
      VRP_JOB_MAX_ATTEMPTS: '2',
      VRP_JOB_RETRY_BASE: '10ms',
      VRP_LOG_LEVEL: 'warn',
    }),
  );
  const api = apiClient(() => server.url, await fetchToken(server.url, app));
  const [{ service_id: id }] = await api.ok('POST', 'service/create-order', order);
  await api.ok('POST', `service/${id}/create`);
  const until = Date.now() + WAIT_MS;
  let status: { status: string; job: unknown } | undefined;
  while (Date.now() < until) {
    status = await api.ok('GET', `service/${id}/status`);
    if (status!.status === 'failed' && status!.job === null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(status?.status, 'failed');

  // Item 16: the reseller reads why, and nothing the two attempts took is kept.
  const jobs: { job_id: string; action: string; status: string; error: string; attempts: number }[] =
    await api.ok('GET', `service/${id}/jobs`);
  const job = jobs.find((j) => j.action === 'create')!;
  assert.equal(job.status, 'failed');
  assert.equal(job.attempts, 2);
  assert.equal(
    job.error,
    'Could not read the VM state (the host did not answer); gave up after 2 attempts; nothing was kept',
  );
  assert.doesNotMatch(job.error, /virsh|socket|will retry/);
  assert.deepEqual(
    await store.db.selectFrom('libvirt_vms').select('id').where('id', '=', id).execute(),
    [],
    'no VM record',
  );
  assert.deepEqual(
    await store.db.selectFrom('ip_addresses').select('address').where('vm_id', '=', id).execute(),
    [],
    'no address held',
  );
  const hosts = await store.db
    .selectFrom('hypervisor_hosts')
    .select(['used_cpu', 'used_ram_gb', 'used_disk_gb'])
    .execute();
  for (const h of hosts)
    assert.deepEqual([h.used_cpu, h.used_ram_gb, h.used_disk_gb], [0, 0, 0], 'no host room held');
  assert.ok(!existsSync(join(storage, id)), 'no disk or seed left');
  assert.deepEqual(readdirSync(storage), []);

  // Item 15: each failed attempt logged once, with the command, its exit status and libvirt's words.
  const lines = server
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, any>)
    .filter((l) => l['msg'] === 'driver error');
  assert.equal(lines.length, 2, server.output());
  for (const l of lines) {
    assert.equal(l['level'], 40, 'warn');
    assert.equal(l['jobId'], job.job_id);
    assert.equal(l['details']?.command, `virsh -c ${uri} domstate vrp-${id}`);
    assert.equal(l['details']?.exitCode, 1);
    assert.match(l['details']?.stderr, /failed to connect to the hypervisor/);
  }
  assert.match(lines[1]!['error'], /gave up after 2 attempts; nothing was kept/);
});
