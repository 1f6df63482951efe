/**
 * Order -> create -> running through the HTTP API with VRP_DRIVER=libvirt, in a real
 * VM whose guest reports the order's host name; terminate leaves no domain, disk or seed.
 * Runs where VRP_TEST_LIBVIRT_TEMPLATE names the tiny test template (.ci/run builds it).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { slowWaitMs } from '../helpers/budget.ts';
import { consoleLines, poolVolumes, startLibvirtE2e } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

test('a real VM through the API: order, create, running, terminate', {
  skip: noLibvirtTemplate,
  timeout: slowWaitMs(600_000),
}, async () => {
  const { api, order } = await startLibvirtE2e('lvapi', 'vm1.example.com');
  const [{ service_id: id }] = await api.ok('POST', 'service/create-order', order);
  await api.ok('POST', `service/${id}/create`);
  const until = Date.now() + slowWaitMs(300_000);
  await api.settled(id, 'running', until, 500);
  const details = await api.ok('GET', `service/${id}/details`);
  const domains = execFileSync('virsh', ['-c', 'qemu:///system', 'list', '--name'], { encoding: 'utf8' });
  assert.ok(domains.includes(`vrp-${id}`), 'the domain runs');
  let report = '';
  while (Date.now() < until && !report) {
    report = consoleLines(id).find((l) => l.startsWith('VRP-GUEST')) ?? '';
    if (!report) await new Promise((r) => setTimeout(r, 500));
  }
  assert.match(report, /hostname=vm1\.example\.com /, "the guest took the order's host name");
  assert.match(report, new RegExp(`ips=${details.ip.replaceAll('.', '\\.')},`), 'the guest got its address');

  await api.ok('POST', `service/${id}/terminate`);
  await api.settled(id, 'terminated', until, 500);
  const all = execFileSync('virsh', ['-c', 'qemu:///system', 'list', '--all', '--name'], {
    encoding: 'utf8',
  });
  assert.ok(!all.includes(`vrp-${id}`), 'no domain left');
  assert.deepEqual(
    poolVolumes().filter((n) => n.startsWith(id)),
    [],
    'no disk, seed or console volume left',
  );
});
