import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { DriverError } from '../../src/drivers/driver.ts';
import { openStore } from '../../src/store/database.ts';
import { driverContract } from './contract.ts';

async function simulated(env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-sim-'));
  const store = await openStore({ databaseUrl: undefined, dataDir });
  const driver = await createDriver(
    loadConfig({ VRP_DATA_DIR: dataDir, VRP_SIMULATED_SPEED: '0', ...env }),
    store.db,
  );
  return {
    driver,
    store,
    templateId: 'any-template',
    async cleanup() {
      await driver.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

driverContract('simulated', () => simulated());

const spec = (vmId: string, cpu = 1) => ({
  vmId,
  hostname: 'h.example.com',
  username: 'root',
  password: 'Pass-word-1',
  templateId: 't',
  cpu,
  ramGb: 1,
  diskGb: 10,
  ipCount: 1,
});
const id = (n: number) => `0d0d0d0d-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe('simulated hypervisor', () => {
  test('capacity: no room fails permanently, destroy gives it back', async () => {
    const t = await simulated({ VRP_SIM_HOSTS: 'small:2:4:100:10' });
    try {
      await t.driver.create(spec(id(1), 2));
      await assert.rejects(
        t.driver.create(spec(id(2))),
        (e: unknown) => e instanceof DriverError && !e.transient && /No host has room/.test(e.message),
      );
      await t.driver.destroy(id(1));
      assert.equal((await t.driver.create(spec(id(2)))).power, 'running');
    } finally {
      await t.cleanup();
    }
  });

  test('addresses: never held twice under concurrency, pool exhaustion, reuse after release', async () => {
    const t = await simulated({ VRP_SIM_IP_POOL: '10.9.0.0/28' }); // 13 usable addresses
    try {
      const vms = await Promise.allSettled(
        Array.from({ length: 15 }, (_, i) => t.driver.create(spec(id(i)))),
      );
      const ok = vms
        .filter((v) => v.status === 'fulfilled')
        .map((v) => (v as PromiseFulfilledResult<{ vmId: string; ips: readonly string[] }>).value);
      assert.equal(ok.length, 13);
      const ips = ok.flatMap((v) => v.ips);
      assert.equal(new Set(ips).size, 13, 'no address given twice');
      const failed = vms.filter((v) => v.status === 'rejected') as PromiseRejectedResult[];
      assert.ok(
        failed.every((f) => /No free IPv4 address in pool 10.9.0.0\/28/.test(String(f.reason.message))),
      );
      assert.ok(
        !ips.includes('10.9.0.0') && !ips.includes('10.9.0.1') && !ips.includes('10.9.0.15'),
        'network, gateway, broadcast kept out',
      );
      // A released address goes back to the pool and can be handed out again.
      await t.driver.destroy(ok[0]!.vmId);
      const again = await Promise.allSettled(
        Array.from({ length: 15 }, (_, i) => t.driver.create(spec(id(100 + i)))),
      );
      assert.equal(again.filter((v) => v.status === 'fulfilled').length, 1);
    } finally {
      await t.cleanup();
    }
  });

  test('fault injection: transient and permanent, and nothing half-done', async () => {
    const t1 = await simulated({ VRP_SIM_FAULTS: 'transient=1' });
    try {
      await assert.rejects(
        t1.driver.create(spec(id(1))),
        (e: unknown) => e instanceof DriverError && e.transient,
      );
      assert.equal(await t1.driver.inspect(id(1)), undefined);
      const held = await t1.store.db
        .selectFrom('ip_addresses')
        .select('address')
        .where('vm_id', 'is not', null)
        .execute();
      assert.deepEqual(held, []);
    } finally {
      await t1.cleanup();
    }
    const t2 = await simulated({ VRP_SIM_FAULTS: 'permanent=1' });
    try {
      await assert.rejects(
        t2.driver.create(spec(id(1))),
        (e: unknown) => e instanceof DriverError && !e.transient,
      );
    } finally {
      await t2.cleanup();
    }
  });

  test('state survives a new driver on the same store', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vrp-sim-'));
    try {
      const config = loadConfig({ VRP_DATA_DIR: dataDir, VRP_SIMULATED_SPEED: '0' });
      let store = await openStore({ databaseUrl: undefined, dataDir });
      let driver = await createDriver(config, store.db);
      await driver.create(spec(id(1)));
      await driver.stop(id(1), { timeoutMs: 1000 });
      await store.close();
      store = await openStore({ databaseUrl: undefined, dataDir });
      driver = await createDriver(config, store.db);
      const vm = await driver.inspect(id(1));
      assert.equal(vm?.power, 'stopped');
      assert.equal(vm?.ips.length, 1);
      await store.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('a non-zero speed takes time, speed 0 does not', async () => {
    const slow = await simulated({ VRP_SIMULATED_SPEED: '0.02' });
    try {
      const t0 = Date.now();
      await slow.driver.create(spec(id(1)));
      assert.ok(Date.now() - t0 >= 8000 * 0.02 * 0.9, 'create takes about 8 s times the speed');
    } finally {
      await slow.cleanup();
    }
  });
});
