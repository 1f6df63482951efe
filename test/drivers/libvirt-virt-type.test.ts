/**
 * `auto` chooses KVM only where libvirt's QEMU really runs with it. The decision over
 * libvirt's recorded answers, and the real choice on this machine's libvirt where there is one.
 */
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { test } from 'node:test';
import { createCommands } from '../../src/drivers/libvirt/commands.ts';
import { kvmDeviceClosed } from '../../src/drivers/libvirt/local-system.ts';
import {
  decideVirtType,
  detectVirtType,
  isKvmRefused,
  kvmRefusedChoice,
} from '../../src/drivers/libvirt/virt-type.ts';
import { hasCommand } from '../helpers/libvirt.ts';

/** `virsh domcapabilities --virttype kvm` on a KVM host (abridged). */
const KVM_CAPS = `<domainCapabilities>
  <path>/usr/bin/qemu-system-x86_64</path>
  <domain>kvm</domain>
  <machine>pc-i440fx-7.2</machine>
  <arch>x86_64</arch>
</domainCapabilities>
`;
/** The same command here: no /dev/kvm (and what libvirt says where its QEMU user may not open it). */
const NO_KVM = `error: failed to get emulator capabilities
error: invalid argument: the accel 'kvm' is not supported by '/usr/bin/qemu-system-x86_64' on this host
`;

/** `virsh start` of a KVM domain where libvirt said KVM is usable but /dev/kvm is 0600 root (recorded). */
const START_REFUSED = `error: Failed to start domain 'vrp-x'
error: internal error: qemu unexpectedly closed the monitor: Could not access KVM kernel module: Permission denied
2026-11-25T21:38:39.274766Z qemu-system-x86_64: -accel kvm: failed to initialize kvm: Permission denied
`;

test('a start that QEMU could not do with KVM is told apart from other failures, and chooses TCG with its reason', () => {
  assert.equal(isKvmRefused(START_REFUSED), true);
  assert.equal(isKvmRefused(NO_KVM), true);
  assert.equal(
    isKvmRefused("error: Failed to start domain 'vrp-x'\nerror: Cannot access storage file '/x/disk.qcow2'"),
    false,
  );
  assert.equal(isKvmRefused(''), false);
  const c = kvmRefusedChoice(START_REFUSED);
  assert.equal(c.type, 'qemu');
  assert.match(c.reason, /failed to initialize kvm: Permission denied/);
  assert.match(c.reason, /TCG/);
});

test('libvirt reporting KVM usable chooses kvm', () => {
  const c = decideVirtType({ ok: true, stdout: KVM_CAPS });
  assert.equal(c.type, 'kvm');
  assert.match(c.reason, /KVM usable/);
});

test("libvirt refusing the kvm accelerator chooses TCG, with libvirt's reason", () => {
  const c = decideVirtType({ ok: false, stderr: NO_KVM });
  assert.equal(c.type, 'qemu');
  assert.match(c.reason, /the accel 'kvm' is not supported/);
  assert.doesNotMatch(c.reason, /^error:/);
});

test('an answer that does not name kvm, or no answer at all, chooses TCG', () => {
  assert.equal(
    decideVirtType({ ok: true, stdout: '<domainCapabilities><domain>qemu</domain></domainCapabilities>' })
      .type,
    'qemu',
  );
  assert.equal(decideVirtType({ ok: true, stdout: '' }).type, 'qemu');
  const down = decideVirtType({ ok: false, stderr: 'error: failed to connect to the hypervisor\n' });
  assert.equal(down.type, 'qemu');
  assert.match(down.reason, /failed to connect/);
  assert.match(decideVirtType({ ok: false, stderr: '' }).reason, /no answer/);
});

test('kvm or qemu set explicitly is taken as is, without asking libvirt', async () => {
  const never = {
    virsh: () => {
      throw new Error('libvirt must not be asked');
    },
  };
  assert.deepEqual(await detectVirtType('kvm', 'qemu+ssh://root@kvm1/system', never), {
    type: 'kvm',
    reason: 'VRP_LIBVIRT_VIRT_TYPE=kvm',
  });
  assert.equal((await detectVirtType('qemu', 'qemu:///system', never)).type, 'qemu');
});

test("auto asks the host's own libvirt connection; one that does not answer gets TCG", async () => {
  const commands = createCommands();
  try {
    // No libvirtd listens on this socket: the command fails, and TCG runs everywhere.
    const c = await detectVirtType('auto', 'qemu:///session?socket=/nonexistent/vrp.sock', commands);
    assert.equal(c.type, 'qemu');
    assert.match(c.reason, /KVM not usable according to libvirt/);
  } finally {
    await commands.close();
  }
});

const here = hasCommand('virsh') && !existsSync('/dev/kvm');
test('auto on this machine (libvirtd running, no /dev/kvm) chooses TCG', {
  skip: !here && 'needs virsh, a running system libvirtd and no /dev/kvm',
}, async () => {
  const commands = createCommands();
  try {
    const c = await detectVirtType('auto', 'qemu:///system', commands);
    assert.equal(c.type, 'qemu');
    assert.match(c.reason, /kvm/i);
  } finally {
    await commands.close();
  }
});

test('a /dev/kvm only root may open means TCG; one its group or others may open leaves it to libvirt', () => {
  const chr = 0o020000;
  assert.match(kvmDeviceClosed({ mode: chr | 0o600, uid: 0 })!, /root only \(mode 0600\).*TCG/);
  assert.equal(kvmDeviceClosed({ mode: chr | 0o660, uid: 0 }), undefined);
  assert.equal(kvmDeviceClosed({ mode: chr | 0o666, uid: 0 }), undefined);
  assert.equal(
    kvmDeviceClosed({ mode: chr | 0o600, uid: 64055 }),
    undefined,
    'owned by another user: libvirt decides',
  );
  assert.equal(kvmDeviceClosed(undefined), undefined, 'no device: libvirt decides');
});

const closedHere =
  hasCommand('virsh') && existsSync('/dev/kvm') && kvmDeviceClosed(statSync('/dev/kvm')) !== undefined;
test('auto on this machine (a /dev/kvm only root may open) chooses TCG without asking libvirt', {
  skip: !closedHere && 'needs virsh and a /dev/kvm of mode 0600 owned by root',
}, async () => {
  const asked: string[][] = [];
  const commands = createCommands();
  try {
    const c = await detectVirtType('auto', 'qemu:///system', {
      virsh: (uri, args, what, ms) => {
        asked.push([...args]);
        return commands.virsh(uri, args, what, ms);
      },
    });
    assert.equal(c.type, 'qemu');
    assert.match(c.reason, /root only/);
    assert.deepEqual(asked, []);
  } finally {
    await commands.close();
  }
});
