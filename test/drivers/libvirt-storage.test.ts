/** The libvirt driver's readings of virsh's storage answers and of host URIs (no libvirt needed). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  migrationAddress,
  migrationAddressArgs,
  parseJobInfo,
} from '../../src/drivers/libvirt/libvirt-driver.ts';
import { parseVolumeList } from '../../src/drivers/libvirt/storage.ts';

test("a live migration's data goes to the destination's host name, or to loopback for a local libvirtd", () => {
  assert.equal(migrationAddress('qemu+ssh://root@kvm2.internal/system'), 'kvm2.internal');
  assert.equal(migrationAddress('qemu+tcp://10.0.0.7:16509/system'), '10.0.0.7');
  assert.equal(migrationAddress('qemu+unix:///system?socket=/run/vrp-test/b/libvirt-sock'), '127.0.0.1');
  assert.equal(migrationAddress('qemu:///system'), '127.0.0.1');
});

test('a migration to a loopback address makes the destination listen on that address only', () => {
  // libvirt refuses a loopback migration_address in qemu.conf: without --listen-address the
  // destination's QEMU (and its NBD server for the disks) would listen on every address.
  assert.deepEqual(
    migrationAddressArgs('qemu+unix:///system?socket=/tmp/vrp-test-hosts/b/run/libvirt-sock'),
    ['--listen-address', '127.0.0.1', '--migrateuri', 'tcp://127.0.0.1'],
  );
  assert.deepEqual(migrationAddressArgs('qemu:///system'), [
    '--listen-address',
    '127.0.0.1',
    '--migrateuri',
    'tcp://127.0.0.1',
  ]);
  assert.deepEqual(migrationAddressArgs('qemu+tcp://[::1]/system'), [
    '--listen-address',
    '::1',
    '--migrateuri',
    'tcp://[::1]',
  ]);
  // A remote host listens where its own libvirt says (qemu.conf), and the data goes to its name.
  assert.deepEqual(migrationAddressArgs('qemu+ssh://root@kvm2.internal/system'), [
    '--migrateuri',
    'tcp://kvm2.internal',
  ]);
});

test("the volume names of `virsh vol-list`'s table", () => {
  const table = ` Name                         Path
---------------------------------------------------------------
 0c0c.qcow2                   /var/lib/vrp/pool/0c0c.qcow2
 template-tiny-d00f960734d3-337fe70b.initrd   /var/lib/vrp/pool/template-tiny-d00f960734d3-337fe70b.initrd

`;
  assert.deepEqual(parseVolumeList(table), ['0c0c.qcow2', 'template-tiny-d00f960734d3-337fe70b.initrd']);
  assert.deepEqual(parseVolumeList(' Name   Path\n--------------\n\n'), []);
});

test("a migration's figures from the destination's `domjobinfo --completed`", () => {
  const out = `Job type:         Completed
Operation:        Incoming migration
Time elapsed:     9035         ms
Data processed:   1.003 GiB
Total downtime:   95           ms
Downtime w/o network: 93           ms
`;
  assert.deepEqual(parseJobInfo(out), { downtime_ms: 95, elapsed_ms: 9035 });
  assert.deepEqual(parseJobInfo('Job type:         None\n'), {});
});
