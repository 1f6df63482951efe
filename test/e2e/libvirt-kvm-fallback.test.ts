/**
 * The switch from KVM to TCG at start: a host whose libvirt says KVM is usable although its QEMU
 * cannot open /dev/kvm. `auto` believes libvirt, the first start fails ("Could not access KVM
 * kernel module"), and in the same job the host switches to TCG, the domain is defined again as
 * `qemu` and started; the choice is logged a second time with the reason.
 *
 * Real parts only: this machine's libvirt, reached by a URI that is not `qemu:///system` (the
 * same daemon through its socket path), so the driver cannot look at /dev/kvm itself and goes by
 * libvirt's answer, as it does for a remote host. Runs where VRP_TEST_LIBVIRT_TEMPLATE names the
 * tiny test template, VRP_TEST_KVM_FALLBACK is set (it runs alone: see notSuchAHost) and this
 * machine is such a host (a /dev/kvm only root may open, and libvirt saying KVM is usable);
 * elsewhere it is skipped with the reason.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, rmSync, statSync } from 'node:fs';
import { test } from 'node:test';
import { kvmDeviceClosed } from '../../src/drivers/libvirt/local-system.ts';
import { slowWaitMs } from '../helpers/budget.ts';
import { libvirtSaysKvm, logLines, startLibvirtE2e } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const URI = 'qemu:///system?socket=/run/libvirt/libvirt-sock';

function notSuchAHost(): string | false {
  if (noLibvirtTemplate) return noLibvirtTemplate;
  // On such a host every `virsh define` takes 30-60 s and libvirt serves them one at a time:
  // beside the other real-VM tests, their defines and this test's ran past the driver's 120 s
  // timeout. So it runs alone, after the suite (.ci/run's last stage).
  if (!process.env['VRP_TEST_KVM_FALLBACK'])
    return 'runs alone: VRP_TEST_KVM_FALLBACK=1 npm test -- test/e2e/libvirt-kvm-fallback.test.ts (.ci/run does, after the suite)';
  if (!existsSync('/dev/kvm') || kvmDeviceClosed(statSync('/dev/kvm')) === undefined)
    return "this machine's QEMU may open /dev/kvm (or there is none): no refused KVM start to recover from";
  if (!libvirtSaysKvm(URI)) return 'libvirt here says KVM is not usable: auto chooses TCG without trying KVM';
  return false;
}

test('a start QEMU could not make with KVM switches the host to TCG and provisions in the same job', {
  skip: notSuchAHost(),
  // Each `virsh define` takes 30-60 s on such a host (libvirt probes QEMU again: docs/libvirt.md).
  timeout: slowWaitMs(600_000),
}, async () => {
  const { server, api, order } = await startLibvirtE2e('lvfall', 'fallback.example.com', {
    VRP_LIBVIRT_URI: URI,
    VRP_STOP_TIMEOUT: '2s',
    VRP_LOG_LEVEL: 'debug',
  });
  const [{ service_id: id }] = await api.ok('POST', 'service/create-order', order);
  const domains = [`vrp-${id}`];
  try {
    await api.ok('POST', `service/${id}/create`);
    const until = Date.now() + slowWaitMs(540_000);
    await api.settled(id, 'running', until);
    const jobs = await api.ok('GET', `service/${id}/jobs`);
    const create = (jobs as { action: string; attempts: number; status: string }[]).find(
      (j) => j.action === 'create',
    )!;
    assert.equal(create.status, 'succeeded');
    assert.equal(create.attempts, 1, 'switched within the first attempt, not by a retry');

    const output = logLines(server.output());
    const choices = output.filter((l) => l['msg'] === 'libvirt virtualisation');
    assert.deepEqual(
      choices.map((c) => c['virtType']),
      ['kvm', 'qemu'],
      'libvirt believed first, TCG after the refused start',
    );
    assert.match(String(choices[1]!['reason']), /could not start with KVM/);
    const commands = output.filter((l) => l['msg'] === 'driver command');
    const starts = commands.filter((c) => c['command'] === 'virsh start');
    assert.deepEqual(
      starts.map((c) => c['ok']),
      [false, true],
      'one start refused (KVM), the next made (TCG)',
    );
    const xml = execFileSync('virsh', ['-c', URI, 'dumpxml', domains[0]!], { encoding: 'utf8' });
    assert.match(xml, /<domain type='qemu'/, 'defined again as qemu');

    // The host stays on TCG: the next VM is defined as qemu at once, no start refused.
    const [{ service_id: second }] = await api.ok('POST', 'service/create-order', {
      ...order,
      domain_name: 'fallback2.example.com',
    });
    domains.push(`vrp-${second}`);
    await api.ok('POST', `service/${second}/create`);
    await api.settled(second, 'running', until);
    const later = logLines(server.output()).filter(
      (l) => l['msg'] === 'driver command' && l['command'] === 'virsh start',
    );
    assert.deepEqual(
      later.map((c) => c['ok']),
      [false, true, true],
    );
    const xml2 = execFileSync('virsh', ['-c', URI, 'dumpxml', domains[1]!], { encoding: 'utf8' });
    assert.match(xml2, /<domain type='qemu'/);
    for (const s of [id, second]) await api.ok('POST', `service/${s}/terminate`);
    for (const s of [id, second]) await api.settled(s, 'terminated', until);
  } finally {
    // A failed check must not leave VMs running; and not being qemu:///system, the driver leaves
    // libvirt's QEMU logs to the host: removed here.
    for (const d of domains) {
      for (const args of [
        ['destroy', d],
        ['undefine', d],
      ])
        spawnSync('virsh', ['-c', URI, ...args], { stdio: 'ignore' });
      rmSync(`/var/log/libvirt/qemu/${d}.log`, { force: true });
    }
  }
});
