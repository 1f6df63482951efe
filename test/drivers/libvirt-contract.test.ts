/**
 * The driver contract with real VMs (libvirt/QEMU; TCG where KVM does not work), on a test host
 * of its own (scripts/libvirt/test-host.sh: a libvirtd of its own on this machine). On its own
 * host it runs beside the system libvirtd's real-VM files instead of after them (about two
 * minutes of real VMs, seven boots), and its defines queue in its own daemon. Runs where
 * VRP_TEST_LIBVIRT_TEMPLATE names a template built by scripts/libvirt/build-test-template.sh
 * and libvirt is installed (.ci/run sets both up).
 * test/drivers/libvirt.test.ts keeps the libvirt checks that are about the system daemon.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import {
  closeLibvirtDriverOnStore,
  guestReport,
  libvirtDriverOnStore,
  startTestHost,
} from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';
import { driverContract } from './contract.ts';

let host: Awaited<ReturnType<typeof startTestHost>> | undefined;

before(async () => {
  if (!noLibvirtTemplate) host = await startTestHost(`vrpct${process.pid}`);
});
after(async () => {
  await host?.stop();
});

driverContract(
  'libvirt',
  async () => {
    if (!host) throw new Error('the test host did not start');
    const uri = host.uri;
    const dataDir = mkdtempSync(join(tmpdir(), 'vrp-lv-'));
    // The tiny guest ignores a shutdown request: a reboot is forced after VRP_STOP_TIMEOUT (3 s
    // here), as stop's is after the contract's stopTimeoutMs below (the default, two minutes,
    // made each of the contract's three reboots wait that long).
    const { store, driver } = await libvirtDriverOnStore(dataDir, { VRP_LIBVIRT_HOSTS: `c,${uri},4,8,100` });
    return {
      driver,
      templateId: 'tiny',
      guest: (vmId, n) => guestReport(vmId, n, uri),
      cleanup: () => closeLibvirtDriverOnStore({ store, driver }, dataDir),
    };
  },
  // Reinstall and rescue: checked on real VMs by test/drivers/libvirt-selfservice.test.ts (one VM
  // for every step, the next export after a reinstall included).
  { stopTimeoutMs: 3000, skip: noLibvirtTemplate, selfService: false },
);
