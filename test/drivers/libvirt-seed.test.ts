/** The libvirt driver's seed user-data and domain XML, without libvirt (no VM). */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { domainXml, withGuestSuspendOff } from '../../src/drivers/libvirt/domain-xml.ts';
import { isLocalUri, vncSocketOf } from '../../src/drivers/libvirt/libvirt-driver.ts';
import { seedNetwork, userData, userDataSshKeys, writeSeed } from '../../src/drivers/libvirt/seed.ts';

const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOr1fVAr8o0y2N1ZbK5v6zGkq5Nh0yY2mJ2fZ1X0aYbc me@host';

test('user-data: root gets the SSH keys (root login allowed, password not locked), chpasswd kept', () => {
  const text = userData({ hostname: 'web.example.com', username: 'root', password: 'pw"1', sshKeys: [key] });
  const lines = text.split('\n');
  assert.equal(lines[0], '#cloud-config');
  assert.ok(lines.includes('disable_root: false'));
  const users = lines.indexOf('users:');
  assert.deepEqual(lines.slice(users, users + 6), [
    'users:',
    '  - default',
    '  - name: root',
    '    lock_passwd: false',
    '    ssh_authorized_keys:',
    `      - ${JSON.stringify(key)}`,
  ]);
  assert.ok(lines.includes('chpasswd:'));
  assert.ok(lines.includes('      password: "pw\\"1"'));
  assert.deepEqual(userDataSshKeys(text), [key]);
});

test('user-data without keys has no users entry and leaves root as it was', () => {
  const text = userData({ hostname: 'web.example.com', username: 'root', password: 'pw', sshKeys: [] });
  assert.ok(!text.includes('users:\n  - default'));
  assert.ok(!text.includes('disable_root'));
  assert.deepEqual(userDataSshKeys(text), []);
});

test('user-data quotes every value: no text can add a YAML key or a line', () => {
  const hostile = 'ssh-ed25519 AAAA x\n    - evil: true\u2028"#';
  const text = userData({
    hostname: 'a.example.com',
    username: 'root',
    password: 'p\nq',
    sshKeys: [hostile],
  });
  // One line per key, each a double-quoted scalar with nothing outside printable ASCII.
  assert.ok(!text.includes('\n    - evil'));
  assert.ok(!text.includes('\u2028'));
  assert.deepEqual(userDataSshKeys(text), [hostile]);
});

test('domain XML: VNC on a socket libvirt makes (no TCP port); a second disk moves the seed to vdc', () => {
  const base = {
    name: 'vrp-x',
    virtType: 'qemu' as const,
    cpu: 1,
    ramGb: 1,
    disk: '/p/x.qcow2',
    seed: '/p/x.seed.iso',
    consoleLog: '/p/x.console.log',
  };
  const own = domainXml(base);
  assert.match(own, /<graphics type='vnc'><listen type='socket'\/><\/graphics>/);
  assert.doesNotMatch(own, /<graphics[^>]*(port|autoport)=/);
  assert.match(own, /x\.seed\.iso'\/><target dev='vdb'/);
  const rescue = domainXml({
    ...base,
    uuid: '6a3c7c4e-1111-4222-8333-944455556666',
    disk: '/p/x.rescue.qcow2',
    secondDisk: '/p/x.qcow2',
    seed: '/p/x.rescue-seed.iso',
    metadata: "<vrp:rescue xmlns:vrp='https://vrp.invalid/libvirt/rescue'/>",
  });
  assert.match(rescue, /x\.rescue\.qcow2'\/><target dev='vda'/);
  assert.match(rescue, /x\.qcow2'\/><target dev='vdb'/);
  assert.match(rescue, /x\.rescue-seed\.iso'\/><target dev='vdc'/);
  assert.match(rescue, /<uuid>6a3c7c4e-1111-4222-8333-944455556666<\/uuid>/);
});

test("domain XML: the guest's suspend off; an older definition gets it, one that has it is kept as it is", () => {
  const own = domainXml({
    name: 'vrp-x',
    virtType: 'qemu',
    cpu: 1,
    ramGb: 1,
    disk: '/p/x.qcow2',
    seed: '/p/x.seed.iso',
    consoleLog: '/p/x.console.log',
  });
  const off = "<pm><suspend-to-mem enabled='no'/><suspend-to-disk enabled='no'/></pm>";
  assert.ok(own.includes(off));
  assert.equal(withGuestSuspendOff(own), own);
  // As libvirt writes it back (dumpxml --inactive): kept, so no define follows.
  const kept = `<domain type='qemu'>\n  <on_crash>destroy</on_crash>\n  <pm>\n    <suspend-to-mem enabled="no"/>\n    <suspend-to-disk enabled='no'/>\n  </pm>\n  <devices>\n  </devices>\n</domain>`;
  assert.equal(withGuestSuspendOff(kept), kept);
  // Defined before the rule: none, added before the devices.
  const older = `<domain type='qemu'>\n  <on_crash>destroy</on_crash>\n  <devices>\n    <disk/>\n  </devices>\n</domain>`;
  assert.equal(
    withGuestSuspendOff(older),
    `<domain type='qemu'>\n  <on_crash>destroy</on_crash>\n  ${off}\n  <devices>\n    <disk/>\n  </devices>\n</domain>`,
  );
  // Another namespace's element of that name is not it.
  const other = `<domain>\n  <metadata><pm:x xmlns:pm='urn:x'/></metadata>\n  <devices>\n  </devices>\n</domain>`;
  assert.equal(
    withGuestSuspendOff(other),
    `<domain>\n  <metadata><pm:x xmlns:pm='urn:x'/></metadata>\n  ${off}\n  <devices>\n  </devices>\n</domain>`,
  );
  // One that allows either (set by hand), or says nothing of one: replaced whole.
  for (const pm of [
    "<pm>\n    <suspend-to-mem enabled='yes'/>\n    <suspend-to-disk enabled='no'/>\n  </pm>",
    "<pm>\n    <suspend-to-mem enabled='no'/>\n  </pm>",
    '<pm/>',
  ]) {
    const xml = `<domain>\n  ${pm}\n  <devices/>\n</domain>`;
    assert.equal(withGuestSuspendOff(xml), `<domain>\n  ${off}\n  <devices/>\n</domain>`);
  }
});

test('the VNC socket of a live domain XML, and which hosts are local', () => {
  const live = `<graphics type='vnc' socket='/var/lib/libvirt/qemu/domain-3-vrp-x/vnc.sock'>
      <listen type='socket' socket='/var/lib/libvirt/qemu/domain-3-vrp-x/vnc.sock'/>
    </graphics>`;
  assert.equal(vncSocketOf(live), '/var/lib/libvirt/qemu/domain-3-vrp-x/vnc.sock');
  assert.equal(vncSocketOf("<graphics type='spice' autoport='yes'/>"), undefined);
  assert.equal(vncSocketOf("<graphics type='vnc' port='5900' autoport='yes'/>"), undefined);
  assert.ok(isLocalUri('qemu:///system'));
  assert.ok(isLocalUri('qemu+unix:///system?socket=/tmp/vrp-test-hosts/a/run/libvirt-sock'));
  assert.ok(!isLocalUri('qemu+ssh://root@kvm1.internal/system'));
  assert.ok(!isLocalUri('qemu+tls://kvm1/system'));
});

test('the keys read back from a seed: none without the section; the list ends at the first other line', () => {
  assert.deepEqual(userDataSshKeys(userData({ hostname: 'h', username: 'root', password: undefined })), []);
  const text = userData({ hostname: 'h', username: 'root', password: 'p', sshKeys: ['ssh-ed25519 AAAA a'] });
  assert.deepEqual(userDataSshKeys(`${text}\n      - "not a key of the list"`), ['ssh-ed25519 AAAA a']);
  assert.match(userData({ hostname: 'plain', username: 'root', password: undefined }), /password: ""/);
});

test('writeSeed keeps the previous user-data when no password is given, and writes a new one otherwise', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-seed-'));
  try {
    const runs: string[][] = [];
    const run = async (command: string, args: readonly string[]) => {
      runs.push([command, ...args]);
      return { stdout: '', stderr: '' };
    };
    const spec = {
      instanceId: 'i-1',
      hostname: 'web.example.com',
      username: 'root',
      password: undefined,
      addresses: [{ address: '192.0.2.5', prefixLength: 24 }],
      gateway: '192.0.2.1',
    };
    await writeSeed({ run }, join(dir, 'seed.iso'), dir, spec, '#cloud-config\nkept: true\n');
    assert.equal(readFileSync(join(dir, 'user-data'), 'utf8'), '#cloud-config\nkept: true\n');
    assert.match(
      readFileSync(join(dir, 'network-config'), 'utf8'),
      /- 192\.0\.2\.5\/24\n {4}gateway4: 192\.0\.2\.1/,
    );
    await writeSeed(
      { run },
      join(dir, 'seed.iso'),
      dir,
      { ...spec, password: 'New-pass-1' },
      '#cloud-config\nkept: true\n',
    );
    assert.match(readFileSync(join(dir, 'user-data'), 'utf8'), /password: "New-pass-1"/);
    assert.equal(runs.length, 2);
    assert.equal(runs[0]?.[0], 'genisoimage');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("network-config: each IPv4 address with its own pool's prefix length, the primary's gateway, the IPv6 address with its route on the link", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-seed-'));
  try {
    const run = async () => ({ stdout: '', stderr: '' });
    const network = seedNetwork({
      ipv4: [
        { address: '192.0.2.5', network: '192.0.2.0/24', gateway: '192.0.2.1' },
        { address: '198.51.100.9', network: '198.51.100.0/26', gateway: '198.51.100.1' },
      ],
      ipv6: {
        prefix: '2001:db8:4000:1::/64',
        address: '2001:db8:4000:1::1',
        gateway: 'fe80::1',
        poolNetwork: '2001:db8:4000::/48',
      },
    });
    await writeSeed({ run }, join(dir, 'seed.iso'), dir, {
      instanceId: 'i-1',
      hostname: 'web.example.com',
      username: 'root',
      password: 'Pass-word-1',
      ...network,
    });
    assert.equal(
      readFileSync(join(dir, 'network-config'), 'utf8'),
      [
        'version: 2',
        'ethernets:',
        '  eth0:',
        '    match: { name: "e*" }',
        '    addresses:',
        '      - 192.0.2.5/24',
        '      - 198.51.100.9/26',
        '      - "2001:db8:4000:1::1/64"',
        '    gateway4: 192.0.2.1',
        '    routes:',
        '      - to: "::/0"',
        '        via: "fe80::1"',
        '        on-link: true',
        '',
      ].join('\n'),
    );
    // No IPv6: no IPv6 address, no route.
    await writeSeed({ run }, join(dir, 'seed.iso'), dir, {
      instanceId: 'i-2',
      hostname: 'web.example.com',
      username: 'root',
      password: 'Pass-word-1',
      ...seedNetwork({
        ipv4: [{ address: '192.0.2.5', network: '192.0.2.0/24', gateway: '192.0.2.1' }],
        ipv6: null,
      }),
    });
    assert.doesNotMatch(readFileSync(join(dir, 'network-config'), 'utf8'), /::|routes/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
