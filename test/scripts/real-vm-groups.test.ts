import assert from 'node:assert/strict';
import { test } from 'node:test';
import { realVmGroup } from '../../scripts/test-lanes.ts';

test('real-VM files: the system libvirtd’s in one group, the test hosts’ in another, the rest in none', () => {
  for (const f of [
    'test/drivers/libvirt.test.ts',
    'test/e2e/libvirt-api.test.ts',
    'test/e2e/libvirt-power.test.ts',
    'test/e2e/libvirt-provision.test.ts',
    'test/e2e/libvirt-kvm-fallback.test.ts',
    'test/e2e/libvirt-selfservice.test.ts',
    'test/drivers/libvirt-selfservice.test.ts',
    'test/drivers/libvirt-traffic.test.ts',
    'test/drivers/libvirt-seed-replace.test.ts',
    'test/drivers/libvirt-guest-suspend.test.ts',
  ])
    assert.equal(realVmGroup(f), 'system-libvirtd', f);
  for (const f of [
    'test/drivers/libvirt-hosts.test.ts',
    'test/drivers/libvirt-backups.test.ts',
    'test/drivers/libvirt-contract.test.ts',
    'test/drivers/libvirt-leftovers.test.ts',
    'test/drivers/libvirt-template-sweep.test.ts',
    'test/e2e/libvirt-fleet.test.ts',
    'test/e2e/libvirt-backups.test.ts',
    'test/e2e/libvirt-password.test.ts',
  ])
    assert.equal(realVmGroup(f), 'test-hosts', f);
  for (const f of [
    'test/drivers/libvirt-commands.test.ts',
    'test/drivers/libvirt-disk-export.test.ts',
    'test/drivers/libvirt-seed.test.ts',
    'test/drivers/template-sweep.test.ts',
    'test/drivers/guest-freeze.test.ts',
    'test/scripts/test-host.test.ts',
    'test/e2e/fleet.test.ts',
  ])
    assert.equal(realVmGroup(f), undefined, f);
});
