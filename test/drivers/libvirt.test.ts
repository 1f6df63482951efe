/**
 * The libvirt driver on the system libvirtd with real VMs (libvirt/QEMU; TCG where KVM does not
 * work): a create that fails for good, terminate's clean-up. The driver contract runs on a test
 * host of its own (test/drivers/libvirt-contract.test.ts). Runs where
 * VRP_TEST_LIBVIRT_TEMPLATE names a template built by scripts/libvirt/build-test-template.sh
 * and libvirtd runs (.ci/run sets both up).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { openStore } from '../../src/store/database.ts';
import { guestReport, insertLibvirtVm, poolVolumes, removeTemplateVolumes } from '../helpers/libvirt.ts';
import { libvirtTemplate, noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const template = libvirtTemplate ?? '';

/** A store with the test template, and the libvirt driver on it. */
async function setup(image: string) {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-lv-'));
  const store = await openStore({ databaseUrl: undefined, dataDir });
  await store.db
    .insertInto('os_templates')
    .values({ id: 'tiny', name: 'tiny test template', image, created_at: 0, updated_at: 0 })
    .execute();
  const config = loadConfig({
    VRP_DATA_DIR: dataDir,
    VRP_DRIVER: 'libvirt',
  });
  const driver = await createDriver(config, store.db);
  return {
    store,
    driver,
    async cleanup() {
      await driver.close();
      await removeTemplateVolumes(store.db);
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A running VM of the tiny template, the smallest there is. */
async function createTiny(driver: HypervisorDriver, vmId: string, hostname: string): Promise<void> {
  await driver.create({
    vmId,
    hostname,
    username: 'root',
    password: 'Secret-password-1',
    templateId: 'tiny',
    cpu: 1,
    ramGb: 1,
    diskGb: 1,
    ipCount: 1,
  });
}

/** An OS template the provider has given no image: a create from it fails for good. */
async function addTemplateWithoutImage(store: { db: Awaited<ReturnType<typeof setup>>['store']['db'] }) {
  await store.db
    .insertInto('os_templates')
    .values({ id: 'no-image', name: 'no image', image: null, created_at: 0, updated_at: 0 })
    .execute();
}

describe('libvirt: a create that fails for good', () => {
  test('gives back the host room, the addresses and the VM record', { skip: noLibvirtTemplate }, async () => {
    const { store, driver, cleanup } = await setup(template);
    try {
      await addTemplateWithoutImage(store);
      const vmId = randomUUID();
      await assert.rejects(
        driver.create({
          vmId,
          hostname: 'failed.example.com',
          username: 'root',
          password: 'Secret-password-1',
          templateId: 'no-image',
          cpu: 2,
          ramGb: 2,
          diskGb: 10,
          ipCount: 2,
        }),
        (err: unknown) => err instanceof DriverError && !err.transient && /no image/.test(err.message),
      );
      assert.equal(await driver.inspect(vmId), undefined);
      const held = await store.db
        .selectFrom('ip_addresses')
        .select('address')
        .where('vm_id', '=', vmId)
        .execute();
      assert.deepEqual(held, []);
      const used = await store.db
        .selectFrom('hypervisor_hosts')
        .select(['used_cpu', 'used_ram_gb', 'used_disk_gb'])
        .execute();
      for (const h of used) assert.deepEqual([h.used_cpu, h.used_ram_gb, h.used_disk_gb], [0, 0, 0]);
    } finally {
      await cleanup();
    }
  });

  test('whose clean-up fails is retried (transient), the record kept for the retry', {
    skip: noLibvirtTemplate,
  }, async () => {
    const { store, driver, cleanup } = await setup(template);
    try {
      await addTemplateWithoutImage(store);
      // An earlier attempt's VM on a host no longer configured: cleaning it up cannot reach it.
      const vmId = randomUUID();
      await insertLibvirtVm(store.db, vmId, 'gone');
      await assert.rejects(
        driver.create({
          vmId,
          hostname: 'x.example.com',
          username: 'root',
          password: 'Secret-password-1',
          templateId: 'no-image',
          cpu: 1,
          ramGb: 1,
          diskGb: 10,
          ipCount: 1,
        }),
        (err: unknown) =>
          err instanceof DriverError &&
          err.transient &&
          /no image.*cleaning up failed; retrying/.test(err.message),
      );
      const kept = await store.db.selectFrom('libvirt_vms').select('id').where('id', '=', vmId).execute();
      assert.equal(kept.length, 1, 'the record stays for the retry to clean up');
    } finally {
      await cleanup();
    }
  });
});

describe('libvirt: terminate', () => {
  test("removes libvirt's QEMU log of the domain too", { skip: noLibvirtTemplate }, async () => {
    const { driver, cleanup } = await setup(template);
    try {
      const vmId = randomUUID();
      await createTiny(driver, vmId, 'log.example.com');
      const qemuLog = `/var/log/libvirt/qemu/vrp-${vmId}.log`;
      assert.ok(existsSync(qemuLog), 'libvirt writes it while the VM runs');
      await driver.destroy(vmId);
      assert.ok(!existsSync(qemuLog), 'nothing of the VM is left in /var/log/libvirt/qemu');
      assert.deepEqual(
        poolVolumes().filter((n) => n.startsWith(vmId)),
        [],
        'no disk, seed or console volume left in the pool',
      );
    } finally {
      await cleanup();
    }
  });
});

describe("the real-VM tests' wait for a boot report", () => {
  test("that runs out says how many reports the console has, the domain's state and the console's last lines", {
    skip: noLibvirtTemplate,
  }, async () => {
    await assert.rejects(guestReport(randomUUID(), 1, 'qemu:///system', 300), (e: Error) => {
      assert.match(e.message, /^gave up after 0\.3 s waiting for boot report 1 of the guest; /);
      assert.match(e.message, /the console has 0 report\(s\); the domain is unknown \(/);
      return true;
    });
    const { driver, cleanup } = await setup(template);
    try {
      const vmId = randomUUID();
      await createTiny(driver, vmId, 'report.example.com');
      assert.equal((await guestReport(vmId, 1))['hostname'], 'report.example.com');
      await assert.rejects(guestReport(vmId, 2, 'qemu:///system', 300), (e: Error) => {
        assert.match(e.message, /the console has 1 report\(s\); the domain is running \(booted\)/);
        assert.match(
          e.message,
          /\nVRP-GUEST hostname=report\.example\.com /,
          'the report is among the last lines',
        );
        return true;
      });
      await driver.destroy(vmId);
    } finally {
      await cleanup();
    }
  });
});
