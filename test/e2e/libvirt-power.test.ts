/**
 * On real VMs: what an operator does with `virsh` behind the API's back is
 * found by the power-state reconciler (VRP_RECONCILE_INTERVAL=1s here): `virsh destroy` ->
 * `stopped` and start works; `virsh start` -> `running`; and the domain starts with its host
 * (libvirt's autostart) as the API shows it: marked by the API's start and the reconciler's
 * pass over one started outside, unmarked by the API's stop and the pass over one shut off
 * outside; a suspended VM started outside is shut
 * off again; `virsh undefine` of a stopped one -> `failed`. One VM, to spare the shared cores.
 * Runs where VRP_TEST_LIBVIRT_TEMPLATE names the tiny test template (.ci/run builds it).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { slowWaitMs } from '../helpers/budget.ts';
import { startLibvirtE2e } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const URI = 'qemu:///system';
const virsh = (...args: string[]) => execFileSync('virsh', ['-c', URI, ...args], { encoding: 'utf8' }).trim();

test('real VMs: power changes made outside the API become the service status', {
  skip: noLibvirtTemplate,
  timeout: slowWaitMs(900_000),
}, async () => {
  const { server, api, order } = await startLibvirtE2e('lvpower', 'power.example.com', {
    VRP_RECONCILE_INTERVAL: '1s',
  });
  const deadline = Date.now() + slowWaitMs(800_000);
  async function reach(id: string, want: string): Promise<void> {
    let last: { status: string; job: unknown } | undefined;
    while (Date.now() < deadline) {
      last = await api.ok('GET', `service/${id}/status`);
      if (last!.status === want && last!.job === null) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.fail(`service did not become ${want}; last ${JSON.stringify(last)}`);
  }
  const [{ service_id: id }] = await api.ok('POST', 'service/create-order', order);
  const domain = `vrp-${id}`;
  await api.ok('POST', `service/${id}/create`);
  await reach(id, 'running');
  /** Whether libvirt starts the domain when its host boots (`virsh dominfo`'s Autostart). */
  const autostart = () => /^Autostart:\s+(\S+)/m.exec(virsh('dominfo', domain))?.[1];
  async function autostartBecomes(want: string): Promise<void> {
    while (Date.now() < deadline && autostart() !== want) await new Promise((r) => setTimeout(r, 500));
    assert.equal(autostart(), want);
  }
  // Started through the API: it starts with its host.
  assert.equal(autostart(), 'enable', 'marked to start with its host');

  // virsh destroy outside the API -> stopped, and the reconciler's pass unmarks it (its host's
  // boot brings back what the API shows running); start works, and marks it.
  virsh('destroy', domain);
  await reach(id, 'stopped');
  await autostartBecomes('disable');
  const events = (await api.ok('GET', 'events?limit=1000')) as any[];
  assert.ok(
    events.some(
      (e) => e.data.service_id === id && e.data.job_id === null && e.data.reason === 'stopped_outside_api',
    ),
    'the feed tells why',
  );
  await api.ok('POST', `service/${id}/start`);
  await reach(id, 'running');
  assert.equal(virsh('domstate', domain), 'running');

  assert.equal(autostart(), 'enable', 'started through the API: marked');
  // virsh start outside the API -> running, and the reconciler's pass marks it to start with
  // its host, as the API has it running.
  await api.ok('POST', `service/${id}/stop`);
  await reach(id, 'stopped');
  assert.equal(autostart(), 'disable', 'stopped through the API: no longer marked');
  virsh('start', domain);
  await reach(id, 'running');
  await autostartBecomes('enable');

  // A suspended VM started outside is shut off again; the service stays suspended.
  await api.ok('POST', `service/${id}/suspend`);
  await reach(id, 'suspended');
  try {
    virsh('start', domain);
  } catch (err) {
    // The reconciler can power it off again before `virsh start` has finished waiting for QEMU
    // (TCG here takes seconds to start): then the command fails, and the metric below shows why.
    if (!/exited while connecting to monitor|closed the monitor/.test(String(err))) throw err;
  }
  while (Date.now() < deadline && virsh('domstate', domain) !== 'shut off') {
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.equal(virsh('domstate', domain), 'shut off');
  assert.equal((await api.ok('GET', `service/${id}/status`)).status, 'suspended');
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(
    metrics,
    /vrp_power_corrections_total\{kind="suspended_powered_off"\} [1-9]/,
    'powered off by the reconciler',
  );

  // virsh undefine of a stopped VM -> failed; terminate cleans up.
  await api.ok('POST', `service/${id}/unsuspend`);
  await reach(id, 'running');
  await api.ok('POST', `service/${id}/stop`);
  await reach(id, 'stopped');
  virsh('undefine', domain);
  await reach(id, 'failed');
  await api.ok('POST', `service/${id}/terminate`);
  await reach(id, 'terminated');
});
