/**
 * The customers' self-service on real VMs (libvirt/QEMU, the tiny test template): root's SSH keys
 * and the IPv6 address in the seed, reinstall, rescue and back, and the serial and VNC consoles;
 * the VM's interface (on a bridge made here, removed after) keeps the MAC the store gave it
 * through all of them. One VM goes through every step (each `virsh define` is slow on some
 * machines). Runs where VRP_TEST_LIBVIRT_TEMPLATE names a template built by
 * scripts/libvirt/build-test-template.sh, libvirtd runs and this process may add a bridge (root).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { parseInterfaceMacs } from '../../src/drivers/libvirt/libvirt-driver.ts';
import type { Store } from '../../src/store/database.ts';
import { systemAudit } from '../../src/store/repos/audit.ts';
import { createPool } from '../../src/store/repos/ip-pools.ts';
import { networkOf } from '../../src/store/repos/service-network.ts';
import { slowWaitMs, waitUntil } from '../helpers/budget.ts';
import {
  asJobOnStore,
  claimsOfJob,
  closeLibvirtDriverOnStore,
  guestExecWhenUp,
  guestReport,
  guestReports,
  libvirtDriverOnStore,
  poolVolumes,
  testBridge,
  withLibvirtMac,
} from '../helpers/libvirt.ts';
import { libvirtTemplate, noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const template = libvirtTemplate ?? '';
const vmId = randomUUID();
const domain = `vrp-${vmId}`;
const hostname = 'self.example.com';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** A new ed25519 key as an OpenSSH public key line, and the sha256 of its decoded blob. */
function ed25519Key(): { line: string; blobSha256: string } {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  const part = (b: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  };
  const blob = Buffer.concat([part(Buffer.from('ssh-ed25519')), part(raw)]);
  return {
    line: `ssh-ed25519 ${blob.toString('base64')} test@vrp`,
    blobSha256: createHash('sha256').update(blob).digest('hex'),
  };
}

/** The guest's `n`th boot report (VRP-GUEST line) on its serial console log, once written whole. */
function report(n: number): Promise<Record<string, string>> {
  return guestReport(vmId, n);
}

/** A shell command in the guest through its agent, once the agent answers. */
const inGuest = (shell: string) => guestExecWhenUp(domain, shell);

/** libvirt's id of the running domain: a new one at each start. */
const domid = () =>
  execFileSync('virsh', ['-c', 'qemu:///system', 'domid', domain], { encoding: 'utf8' }).trim();

/** Everything a console stream has said so far, and a wait for a pattern in it. */
function reader(stream: Duplex) {
  let text = '';
  stream.on('data', (c: Buffer) => {
    text += c.toString('latin1');
  });
  return {
    text: () => text,
    until: (what: string, re: RegExp) =>
      waitUntil(what, () => re.test(text) || undefined, { everyMs: 100, budgetMs: slowWaitMs(120_000) }),
  };
}

const BRIDGE = 'vrpself0';

/** The MACs of the domain's interfaces: of the running system, or (`inactive`) of its own definition. */
const domainMacs = (inactive = false) =>
  parseInterfaceMacs(
    execFileSync(
      'virsh',
      ['-c', 'qemu:///system', 'domiflist', ...(inactive ? ['--inactive'] : []), domain],
      {
        encoding: 'utf8',
      },
    ),
  );

/** Checkpoints (backup ids) of the exports around a reinstall. */
const CHECKPOINT = '0d0d0d0d-0000-4000-8000-0000000000c1';
const NEXT_CHECKPOINT = '0d0d0d0d-0000-4000-8000-0000000000c2';

describe('libvirt self-service: SSH keys, reinstall, rescue, consoles', { skip: noLibvirtTemplate }, () => {
  let store: Store;
  let driver: HypervisorDriver;
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-lvss-'));
  const key = ed25519Key();
  const password = 'First-password-1';
  let boots = 0;
  let ips = '';
  let removeBridge = () => {};
  /** The VM's MAC as the store has it. */
  const storedMac = async () =>
    (await store.db.selectFrom('libvirt_vms').select('mac').where('id', '=', vmId).executeTakeFirstOrThrow())
      .mac;

  before(async () => {
    removeBridge = testBridge(BRIDGE);
    ({ store, driver } = await libvirtDriverOnStore(dataDir, { VRP_LIBVIRT_BRIDGE: BRIDGE }));
    // An IPv6 pool serving every host: the VM gets a /64 of it, its seed the address.
    await createPool(
      store.db,
      { name: 'v6', family: 'ipv6', network: '2001:db8:4000::/48', hosts: [] },
      Date.now(),
      systemAudit('ip_pool.create'),
    );
  });

  after(async () => {
    await closeLibvirtDriverOnStore({ store, driver }, dataDir, [vmId]);
    removeBridge();
  });

  test('create installs the SSH keys for root', async () => {
    await driver.create({
      vmId,
      hostname,
      username: 'root',
      password,
      templateId: 'tiny',
      cpu: 1,
      ramGb: 1,
      diskGb: 1,
      ipCount: 1,
      sshKeys: [key.line],
    });
    const first = await report(++boots);
    assert.equal(first['ssh_key_sha256'], `${key.blobSha256},`);
    // Its IPv6 address, from the seed's network configuration, set on the guest's interface.
    assert.equal((await networkOf(store.db, vmId)).ipv6?.address, '2001:db8:4000::1');
    assert.equal(first['ipv6'], '2001:db8:4000::1');
    assert.equal(first['hostname'], hostname);
    assert.equal(first['boot'], '1');
    ips = first['ips'] ?? '';
    const keys = await inGuest('cat /root/.ssh/authorized_keys');
    assert.equal(keys.out, `${key.line}\n`);
    // Its interface has the MAC the store gave it, outside libvirt's own random range.
    const mac = await storedMac();
    assert.match(mac ?? '', /^52:54:(?!00)[0-9a-f]{2}(:[0-9a-f]{2}){3}$/);
    assert.deepEqual(domainMacs(), [mac]);
  });

  test('consoles: serial and VNC; the serial one logs in and runs a command', async () => {
    assert.deepEqual(await driver.consoles(vmId), ['serial', 'vnc']);

    const vnc = await driver.openConsole(vmId, 'vnc');
    const rfb = reader(vnc);
    await rfb.until('the RFB greeting', /^RFB 003\.008\n/);
    vnc.destroy();

    const serial = await driver.openConsole(vmId, 'serial');
    const tty = reader(serial);
    const token = randomBytes(6).toString('hex');
    // getty prints its prompt again for each empty line: sent until it answers.
    await waitUntil(
      'the login prompt',
      () => {
        if (/login: $/.test(tty.text())) return true;
        serial.write('\r');
        return undefined;
      },
      { everyMs: 1000, budgetMs: slowWaitMs(120_000) },
    );
    serial.write('root\r');
    await tty.until('the password prompt', /Password: $/);
    serial.write(`${password}\r`);
    // (busybox's shell asks the terminal for its cursor position after the prompt: ESC [6n)
    await tty.until('the shell prompt', new RegExp(`# (${String.fromCharCode(27)}\\[6n)?$`));
    serial.write(`echo hello-${token}\r`);
    // The command's output on a line of its own (the echoed command line starts with the prompt).
    await tty.until('the command output', new RegExp(`\\nhello-${token}\\r?\\n`));
    serial.write('exit\r');
    serial.end();
    // Ending the stream ends `virsh console` (and its `script`).
    await waitUntil('the console session to end', () => {
      try {
        execFileSync('pgrep', ['-f', `console '?${domain}`], { stdio: 'ignore' });
        return undefined;
      } catch {
        return true;
      }
    });
  });

  test('reinstall: a fresh disk, a new instance id and password, same addresses, still running', async () => {
    const before = guestReports(vmId).at(-1) ?? {};
    // Something on the old disk: the reinstall must not keep it.
    await inGuest('echo old > /data/marker; sync');
    // A committed export: its checkpoint would be the base of the next backup, but not after a
    // reinstall (the disk it was taken of is gone).
    const taken = await driver.exportDisk(vmId, CHECKPOINT, null);
    for await (const _ of taken.runs);
    await taken.commit();
    await taken.close();
    // As if the VM were stored before MACs were, and another VM had the MAC its domain has: the
    // reinstall gives it a new one, in its definition too.
    const old = await storedMac();
    await store.db.updateTable('libvirt_vms').set({ mac: null }).where('id', '=', vmId).execute();
    const info = await withLibvirtMac(store.db, 'mac-holder', old ?? '', () =>
      driver.reinstall(vmId, {
        templateId: 'tiny',
        hostname,
        username: 'root',
        password: 'Second-password-2',
        sshKeys: [],
      }),
    );
    assert.equal(info.power, 'running');
    const r = await report(++boots);
    assert.equal(r['boot'], '1', 'the boot counter of a new disk');
    assert.notEqual(r['instance_id'], before['instance_id']);
    assert.equal(r['ips'], ips);
    assert.equal(r['password_sha256'], sha256('Second-password-2'));
    assert.equal(r['ssh_key_sha256'], '', 'the keys were removed');
    const marker = await inGuest('cat /data/marker 2>/dev/null || echo none');
    assert.equal(marker.out.trim(), 'none');
    const mac = await storedMac();
    assert.match(mac ?? '', /^52:54:(?!00)/);
    assert.notEqual(mac, old);
    assert.deepEqual([domainMacs(), domainMacs(true)], [[mac], [mac]]);
    const next = await driver.exportDisk(vmId, NEXT_CHECKPOINT, CHECKPOINT);
    try {
      assert.deepEqual([next.kind, next.since], ['full', null], 'the next backup after a reinstall is full');
    } finally {
      await next.close();
    }
  });

  test('reinstall run again after a crash past its power-off leaves the VM off, as found (its job starts it)', async () => {
    // An earlier attempt powered the VM off and died.
    execFileSync('virsh', ['-c', 'qemu:///system', 'destroy', domain], { stdio: 'ignore' });
    const info = await driver.reinstall(vmId, {
      templateId: 'tiny',
      hostname,
      username: 'root',
      password: 'Second-password-2',
      sshKeys: [],
    });
    assert.equal(info.power, 'stopped');
    assert.equal((await driver.start(vmId)).power, 'running');
    assert.equal((await report(++boots))['boot'], '1');
  });

  test('reinstall of a stopped VM leaves it stopped', async () => {
    await driver.powerOff(vmId);
    const info = await driver.reinstall(vmId, {
      templateId: 'tiny',
      hostname,
      username: 'root',
      password: 'Third-password-3',
      sshKeys: [key.line],
    });
    assert.equal(info.power, 'stopped');
    await driver.start(vmId);
    const r = await report(++boots);
    assert.equal(r['boot'], '1');
    assert.equal(r['password_sha256'], sha256('Third-password-3'));
    assert.equal(r['ssh_key_sha256'], `${key.blobSha256},`);
    // A password reset writes a new seed: root's keys stay in it.
    await driver.setPassword(vmId, 'root', 'Third-password-3');
    // Booted once more on its own disk: the rescue system must show this counter on vdb.
    await driver.powerOff(vmId);
    await driver.start(vmId);
    const again = await report(++boots);
    assert.equal(again['boot'], '2');
    assert.equal(again['ssh_key_sha256'], `${key.blobSha256},`, 'the keys survive a password reset');
  });

  test('rescue without a rescue image fails for good, saying so', async () => {
    await assert.rejects(
      driver.rescue(vmId, { username: 'root', password: 'Rescue-password-1' }),
      (err: unknown) => err instanceof DriverError && !err.transient && /no rescue image/.test(err.message),
    );
    // The provider's image (VRP_RESCUE_IMAGE) is used where the host has none.
    const other = await createDriver(
      loadConfig({ VRP_DATA_DIR: dataDir, VRP_DRIVER: 'libvirt', VRP_RESCUE_IMAGE: '/nonexistent/rescue' }),
      store.db,
    );
    try {
      await assert.rejects(
        other.rescue(vmId, { username: 'root', password: 'Rescue-password-1' }),
        (err: unknown) => err instanceof DriverError && /rescue image is missing/.test(err.message),
      );
    } finally {
      await other.close();
    }
    assert.equal((await driver.inspect(vmId))?.power, 'running', 'nothing happened to the VM');
  });

  test('rescue boots the rescue system with the server disk as vdb; a re-run changes nothing', async () => {
    // The host's own rescue image.
    await store.db.updateTable('hypervisor_hosts').set({ rescue_image: template }).execute();
    // As if the VM were stored before MACs were: it keeps the one its domain has (no other VM has it).
    const mac = await storedMac();
    await store.db.updateTable('libvirt_vms').set({ mac: null }).where('id', '=', vmId).execute();
    const info = await driver.rescue(vmId, { username: 'root', password: 'Rescue-password-1' });
    assert.equal(info.power, 'running');
    assert.equal(await storedMac(), mac);
    assert.deepEqual(
      [domainMacs(), domainMacs(true)],
      [[mac], [mac]],
      'the rescue system answers to the same MAC',
    );
    const r = await report(++boots);
    assert.equal(r['hostname'], `rescue-${hostname}`);
    assert.equal(r['vdb_boots'], '2', "the server's disk, with its boot counter");
    assert.match(r['disks'] ?? '', /^vda:\d+,vdb:\d+,vdc:\d+,$/);
    assert.equal(r['password_sha256'], sha256('Rescue-password-1'));
    assert.equal(r['ips'], ips);
    assert.ok(poolVolumes().includes(`${vmId}.rescue.qcow2`));
    const id = domid();
    await driver.rescue(vmId, { username: 'root', password: 'Rescue-password-1' });
    assert.equal(domid(), id, 'the rescue system was not started again');
    assert.deepEqual(await driver.consoles(vmId), ['serial', 'vnc']);
  });

  test('unrescue after a crash past its power-off boots the own system, removes the rescue volumes; a re-run changes nothing', async () => {
    // An earlier attempt powered the rescue system off and died: the domain is its own one again, off.
    execFileSync('virsh', ['-c', 'qemu:///system', 'destroy', domain], { stdio: 'ignore' });
    assert.equal((await driver.inspect(vmId))?.power, 'stopped');
    assert.ok(poolVolumes().includes(`${vmId}.rescue.qcow2`), 'the rescue volumes are still there');
    const info = await driver.unrescue(vmId, 'running');
    assert.equal(info.power, 'running');
    const r = await report(++boots);
    assert.equal(r['hostname'], hostname);
    assert.equal(r['boot'], '3');
    assert.deepEqual(domainMacs(), [await storedMac()]);
    assert.equal(r['password_sha256'], sha256('Third-password-3'));
    assert.deepEqual(
      poolVolumes().filter((n) => n.startsWith(`${vmId}.rescue`)),
      [],
    );
    const id = domid();
    await driver.unrescue(vmId, 'running');
    assert.equal(domid(), id);
  });

  test("a backup's export and a restore on the system libvirt, whose pool shares this machine's temporary directory's disk, hold one claim there with both copies' room", async (t) => {
    // The pool's directory and TMPDIR on one filesystem: one place (key `fs:<machine>:<device>`).
    const poolPath = /<path>([^<]+)<\/path>/.exec(
      execFileSync('virsh', ['-c', 'qemu:///system', 'pool-dumpxml', 'vrp'], { encoding: 'utf8' }),
    )?.[1];
    const merged = statSync(poolPath ?? assert.fail('no pool path')).dev === statSync(tmpdir()).dev;
    t.diagnostic(`the pool (${poolPath}) and TMPDIR (${tmpdir()}) on one filesystem: ${merged}`);
    const e = await asJobOnStore(dataDir, 'job-export-merged', () =>
      driver.exportDisk(vmId, 'merged-1', null),
    );
    let exportClaims: [string, number, boolean][];
    try {
      exportClaims = await claimsOfJob(store.db, 'job-export-merged');
      assert.deepEqual(
        exportClaims.map(([kind, , released]) => [kind, released]),
        merged
          ? [['fs', false]]
          : [
              ['fs', false],
              ['fs', false],
            ],
        "the export's room held while it is open",
      );
      // Restored from the export's own runs; 64 MiB of data: twice that in one place (the raw
      // file and its qcow2 here, the qcow2 on the pool, never all three at once).
      await asJobOnStore(dataDir, 'job-import-merged', () =>
        driver.importDisk(vmId, e.diskBytes, e.runs, 64 * 2 ** 20),
      );
    } finally {
      await e.close();
    }
    const importClaims = await claimsOfJob(store.db, 'job-import-merged');
    if (merged) assert.deepEqual(importClaims, [['fs', 128 * 2 ** 20, true]]);
    else {
      assert.equal(importClaims.length, 2);
      assert.ok(importClaims.every(([kind, , released]) => kind === 'fs' && released));
    }
    assert.deepEqual(
      await claimsOfJob(store.db, 'job-export-merged'),
      exportClaims.map(([kind, bytes]) => [kind, bytes, true]),
      "the export's room let go once it is closed",
    );
    // It ran when the restore began: it runs on its restored disk.
    assert.equal((await driver.inspect(vmId))?.power, 'running');
    assert.equal((await report(++boots))['hostname'], hostname);
  });

  test('destroy of a VM in rescue removes the rescue volumes too', async () => {
    await driver.rescue(vmId, { username: 'root', password: 'Rescue-password-2' });
    await report(++boots);
    await driver.destroy(vmId);
    assert.deepEqual(
      poolVolumes().filter((n) => n.startsWith(vmId)),
      [],
    );
  });
});
