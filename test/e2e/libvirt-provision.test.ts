/**
 * On this machine (no usable KVM: no /dev/kvm, or one only root may open) the
 * server's `auto` chooses TCG, says so once per host at start, defines the domain as `qemu`, and logs each driver command with its duration
 * (what bench/libvirt.ts measures the project's own part with). Runs where
 * VRP_TEST_LIBVIRT_TEMPLATE names the tiny test template.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { test } from 'node:test';
import { kvmDeviceClosed } from '../../src/drivers/libvirt/local-system.ts';
import { slowWaitMs } from '../helpers/budget.ts';
import { libvirtSaysKvm, logLines, startLibvirtE2e } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

test('auto picks what libvirt can run, logs it, and the driver logs its commands with durations', {
  skip: noLibvirtTemplate,
  timeout: slowWaitMs(300_000),
}, async () => {
  const { server, api, order } = await startLibvirtE2e('lvprov', 'prov.example.com', {
    VRP_STOP_TIMEOUT: '2s',
    VRP_LOG_LEVEL: 'debug',
  });
  // What libvirt says, unless this machine's /dev/kvm may be opened by root only (TCG then);
  // the driver believes it until a VM fails to start with KVM.
  const deviceClosed = existsSync('/dev/kvm') && kvmDeviceClosed(statSync('/dev/kvm')) !== undefined;
  const saysKvm = !deviceClosed && libvirtSaysKvm();

  const [{ service_id: id }] = await api.ok('POST', 'service/create-order', order);
  await api.ok('POST', `service/${id}/create`);
  const until = Date.now() + slowWaitMs(240_000);
  await api.settled(id, 'running', until);
  // Asked at start in the background; the first define waited for the answer.
  const choices = logLines(server.output()).filter((l) => l['msg'] === 'libvirt virtualisation');
  assert.equal(choices[0]!['virtType'], saysKvm ? 'kvm' : 'qemu');
  // One line for the one host, and a second only where KVM was refused at the start.
  const fellBack = choices.length === 2;
  if (fellBack) {
    assert.equal(saysKvm, true, 'TCG is never left for KVM');
    assert.equal(choices[1]!['virtType'], 'qemu');
    assert.match(String(choices[1]!['reason']), /could not start with KVM/);
  } else assert.equal(choices.length, 1, 'one line for the one host');
  for (const c of choices) {
    assert.equal(c['hostId'], 'libvirt-1');
    assert.ok(String(c['reason']).length > 0, 'the reason is given');
  }
  const expected = choices.at(-1)!['virtType'];
  const xml = execFileSync('virsh', ['-c', 'qemu:///system', 'dumpxml', `vrp-${id}`], { encoding: 'utf8' });
  assert.match(xml, new RegExp(`<domain type='${expected}'`), 'the domain is defined with the chosen type');
  const commands = logLines(server.output()).filter((l) => l['msg'] === 'driver command');
  const names = new Set(commands.map((c) => c['command']));
  for (const n of ['virsh vol-create-as', 'virsh vol-upload', 'virsh define', 'virsh start'])
    assert.ok(names.has(n), `${n} is logged (${[...names].join(', ')})`);
  for (const c of commands) {
    assert.equal(typeof c['ms'], 'number');
    assert.ok((c['ms'] as number) >= 0);
  }
  // `virsh domstate` fails (no domain yet) by design, and so does `auto`'s question where KVM
  // cannot run (its answer is the failure); the steps of the create succeed.
  const questions = commands.filter((c) => c['command'] === 'virsh domcapabilities');
  if (deviceClosed) assert.equal(questions.length, 0, 'libvirt is not asked where the device is closed');
  else {
    assert.equal(questions.length, 1, 'the host is asked once');
    assert.equal(questions[0]!['ok'], saysKvm);
  }
  // Where KVM was refused, the one start that tried it failed; every other step succeeded.
  const failedStarts = commands.filter((c) => c['command'] === 'virsh start' && c['ok'] === false);
  assert.equal(failedStarts.length, fellBack ? 1 : 0);
  for (const c of commands.filter(
    (c) => c['command'] !== 'virsh domstate' && c !== questions[0] && !failedStarts.includes(c),
  ))
    assert.equal(c['ok'], true, JSON.stringify(c));

  await api.ok('POST', `service/${id}/terminate`);
  await api.settled(id, 'terminated', until);
});
