/**
 * scripts/libvirt/test-host.sh with real libvirt: two test hosts on this machine are separate
 * hosts to libvirt (their own host UUIDs, their own storage at the same pool path), and `stop`
 * leaves nothing behind, even when the host's libvirtd has died; a /dev/kvm only root may open is
 * masked in each, the machine's left as it is. Runs where the real-VM tests run
 * (as root, with libvirtd and the test template: scripts/libvirt/setup-ci.sh). It starts no domain.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { kvmDeviceClosed } from '../../src/drivers/libvirt/local-system.ts';
import { startTestHost, testHostScript } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const run = promisify(execFile);
const virsh = async (uri: string, ...args: string[]) =>
  (await run('virsh', ['-q', '-c', uri, ...args], { timeout: 120_000 })).stdout;

/** The host UUID in `virsh capabilities`. */
async function hostUuid(uri: string): Promise<string> {
  const m = /<host>\s*<uuid>([^<]+)<\/uuid>/.exec(await virsh(uri, 'capabilities'));
  assert.ok(m, `no host uuid from ${uri}`);
  return m[1]!;
}

/** Every process's arguments and mount table, as text, for what a test host might leave. */
function processesAndMounts(): { args: string[]; mounts: string[] } {
  const args: string[] = [];
  const mounts: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      args.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
      mounts.push(readFileSync(`/proc/${pid}/mountinfo`, 'utf8'));
    } catch {
      // ended meanwhile
    }
  }
  return { args, mounts };
}

test('two test hosts: their own host UUIDs and storage; start again gives the same URI; stop leaves no process, mount or directory', {
  skip: noLibvirtTemplate,
}, async () => {
  const names = [`tht-${process.pid}-a`, `tht-${process.pid}-b`];
  after(async () => {
    for (const n of names) await run('bash', [testHostScript, 'stop', n]).catch(() => undefined);
  });
  // Both at once, as two tests' set-ups would.
  const [a, b] = await Promise.all(names.map((n) => startTestHost(n)));
  assert.ok(a && b);
  assert.equal(a.uri, `qemu+unix:///system?socket=${a.dir}/run/libvirt-sock`);
  assert.equal(readFileSync(`${a.dir}/uri`, 'utf8').trim(), a.uri);

  const uuids = [await hostUuid('qemu:///system'), await hostUuid(a.uri), await hostUuid(b.uri)];
  assert.equal(new Set(uuids).size, 3, `host UUIDs: ${uuids.join(', ')}`);
  // Each is the one the script gave it (where libvirt reads the machine's own, all would be that one).
  assert.equal(uuids[1], readFileSync(`${a.dir}/host-uuid`, 'utf8').trim());
  assert.equal(uuids[2], readFileSync(`${b.dir}/host-uuid`, 'utf8').trim());

  // What each host sees, through its libvirtd's root (/proc/PID/root: its mount namespace). Its
  // /run has /run/lock (/var/lock), where libvirt locks the serial consoles it hands out. A
  // /dev/kvm only root may open (the driver's rule, kvmDeviceClosed) is an empty file there, and
  // the host's libvirt says KVM is not usable (its cached probe agrees with its own check);
  // elsewhere the host sees the machine's device. The machine's own device is left as it was.
  const machineKvm = statSync('/dev/kvm', { throwIfNoEntry: false });
  const closed = kvmDeviceClosed(machineKvm) !== undefined;
  for (const h of [a, b]) {
    const root = `/proc/${readFileSync(`${h.dir}/libvirtd.pid`, 'utf8').trim()}/root`;
    assert.ok(statSync(`${root}/run/lock`).isDirectory(), `${h.uri}: /run/lock`);
    const seen = statSync(`${root}/dev/kvm`, { throwIfNoEntry: false });
    if (closed) {
      assert.ok(seen?.isFile() && seen.size === 0, `${h.uri}: /dev/kvm masked`);
      await assert.rejects(virsh(h.uri, 'domcapabilities', '--virttype', 'kvm'), /not supported/);
    } else {
      assert.equal(seen?.isFile() ?? false, false, `${h.uri}: /dev/kvm not masked`);
    }
  }
  const machineKvmAfter = statSync('/dev/kvm', { throwIfNoEntry: false });
  assert.equal(machineKvmAfter?.isCharacterDevice(), machineKvm?.isCharacterDevice());
  assert.equal(machineKvmAfter?.mode, machineKvm?.mode);

  // Started again: the same daemon, the same URI.
  const pidA = readFileSync(`${a.dir}/libvirtd.pid`, 'utf8').trim();
  assert.equal((await startTestHost(names[0]!)).uri, a.uri);
  assert.equal(readFileSync(`${a.dir}/libvirtd.pid`, 'utf8').trim(), pidA);

  // A volume made in A's pool vrp is A's alone: B's pool at the same path does not list it,
  // and the system daemon's real /var/lib/vrp/pool does not hold it.
  const vol = `tht-${process.pid}.img`;
  for (const h of [a, b])
    assert.match(await virsh(h.uri, 'pool-dumpxml', 'vrp'), /<path>\/var\/lib\/vrp\/pool<\/path>/);
  await virsh(a.uri, 'vol-create-as', 'vrp', vol, '1M');
  await virsh(a.uri, 'pool-refresh', 'vrp');
  await virsh(b.uri, 'pool-refresh', 'vrp');
  assert.match(await virsh(a.uri, 'vol-list', 'vrp'), new RegExp(vol.replaceAll('.', '\\.')));
  assert.ok(existsSync(`${a.dir}/storage/${vol}`));
  assert.doesNotMatch(await virsh(b.uri, 'vol-list', 'vrp'), new RegExp(vol.replaceAll('.', '\\.')));
  assert.equal(existsSync(`/var/lib/vrp/pool/${vol}`), false);

  // A's libvirtd dies; stop still ends the rest of A (its virtlogd) and removes it all.
  process.kill(Number(pidA), 'SIGKILL');
  for (const h of [a, b]) await h.stop();
  const left = processesAndMounts();
  for (const [n, h] of [
    [names[0]!, a],
    [names[1]!, b],
  ] as const) {
    assert.deepEqual(
      left.args.filter((x) => x.includes(`${h.dir}/`)),
      [],
      `processes of ${n} left`,
    );
    assert.equal(
      left.mounts.some((m) => m.includes(`vrp-test-host-${n} `) || m.includes(`${h.dir}/`)),
      false,
      `mounts of ${n} left`,
    );
    assert.equal(existsSync(h.dir), false, `${h.dir} left`);
    await assert.rejects(virsh(h.uri, 'version'));
  }
  // Stopping a host that is not there is fine.
  await run('bash', [testHostScript, 'stop', names[0]!]);
});
