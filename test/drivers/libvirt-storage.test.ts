/** The libvirt driver's readings of virsh's storage answers and of host URIs (no libvirt needed). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrationAddress } from '../../src/drivers/libvirt/libvirt-driver.ts';
import { parseVolumeList } from '../../src/drivers/libvirt/storage.ts';

test("a live migration's data goes to the destination's host name, or to loopback for a local libvirtd", () => {
  assert.equal(migrationAddress('qemu+ssh://root@kvm2.internal/system'), 'kvm2.internal');
  assert.equal(migrationAddress('qemu+tcp://10.0.0.7:16509/system'), '10.0.0.7');
  assert.equal(migrationAddress('qemu+unix:///system?socket=/run/vrp-test/b/libvirt-sock'), '127.0.0.1');
  assert.equal(migrationAddress('qemu:///system'), '127.0.0.1');
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
