import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { type DiskRun, DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { createIpPool } from '../../src/drivers/ip-pool.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { createSimulatedDriver } from '../../src/drivers/simulated/simulated-driver.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import { waitUntil } from '../helpers/budget.ts';
import { legacySimBackup } from '../helpers/legacy-backup.ts';
import { mockSetTimeout } from '../helpers/mock-timeout.ts';
import { promiseState } from '../helpers/promise-state.ts';
import { createPgDatabase, type StoreKind, testStores } from '../helpers/stores.ts';
import { driverContract } from './contract.ts';

/**
 * A simulated driver on a fresh store of `kind`. `restart` is the server started again on the
 * same store, possibly with changed settings: a new driver (the store stays open, one per process).
 */
async function simulated(kind: StoreKind, env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-sim-'));
  const pg = kind === 'postgres' ? await createPgDatabase() : undefined;
  const store: Store = await openStore({ databaseUrl: pg?.url, dataDir });
  const drivers: HypervisorDriver[] = [];
  const restart = async (changed: Record<string, string> = {}) => {
    const d = await createDriver(
      loadConfig({ VRP_DATA_DIR: dataDir, VRP_SIMULATED_SPEED: '0', ...env, ...changed }),
      store.db,
    );
    drivers.push(d);
    return d;
  };
  const driver = await restart();
  return {
    driver,
    store,
    restart,
    templateId: 'any-template',
    held: async () =>
      (
        await store.db
          .selectFrom('ip_addresses')
          .select('address')
          .where('vm_id', 'is not', null)
          .orderBy('address_num')
          .execute()
      ).map((r) => r.address),
    host: (id: string) =>
      store.db.selectFrom('hypervisor_hosts').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
    async cleanup() {
      for (const d of drivers) await d.close();
      await store.close();
      await pg?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const spec = (vmId: string, cpu = 1, ipCount = 1) => ({
  vmId,
  hostname: 'h.example.com',
  username: 'root',
  password: 'Pass-word-1',
  templateId: 't',
  cpu,
  ramGb: 1,
  diskGb: 10,
  ipCount,
});
const id = (n: number) => `0d0d0d0d-0000-4000-8000-${String(n).padStart(12, '0')}`;
const permanent = (pattern: RegExp) => (e: unknown) =>
  e instanceof DriverError && !e.transient && pattern.test(e.message);

for (const kind of testStores()) {
  driverContract(`simulated (${kind})`, () => simulated(kind));

  describe(`simulated hypervisor (${kind})`, () => {
    test('capacity: no room fails permanently, destroy gives it back', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'small:2:4:100:10' });
      try {
        await t.driver.create(spec(id(1), 2));
        await assert.rejects(t.driver.create(spec(id(2))), permanent(/No host has room/));
        await t.driver.destroy(id(1));
        assert.equal((await t.driver.create(spec(id(2)))).power, 'running');
      } finally {
        await t.cleanup();
      }
    });

    test('addresses: never held twice under concurrency, pool exhaustion, reuse after release', async () => {
      const t = await simulated(kind, { VRP_SIM_IP_POOL: '10.9.0.0/28' }); // 13 usable addresses
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

    test('addresses: the primary is the first one allocated, also within one millisecond', async () => {
      const t = await simulated(kind, { VRP_SIM_IP_POOL: '10.9.0.0/29' }); // .2 to .6
      let clock = 1000;
      const now = () => clock;
      const driver = createSimulatedDriver({
        db: t.store.db,
        ipPool: await createIpPool(t.store.db, '10.9.0.0/29', now),
        faults: { transient: 0, permanent: 0 },
        speed: 0,
        now,
      });
      try {
        await driver.create(spec(id(1), 1, 1)); // .2
        await driver.create(spec(id(2), 1, 3)); // .3 .4 .5
        clock = 2000;
        await driver.destroy(id(1));
        // Free now: .6 (never used, handed out first), then .2 (released); both in the same millisecond.
        clock = 3000;
        const vm = await driver.create(spec(id(3), 1, 2));
        assert.deepEqual(vm.ips, ['10.9.0.6', '10.9.0.2']);
        assert.deepEqual((await driver.inspect(id(3)))?.ips, ['10.9.0.6', '10.9.0.2']);
        const shrunk = await driver.resize(id(3), { cpu: 1, ramGb: 1, diskGb: 10, ipCount: 1 });
        assert.deepEqual(shrunk.ips, ['10.9.0.6'], 'the primary stays when addresses are released');
      } finally {
        await driver.close();
        await t.cleanup();
      }
    });

    test('create is all-or-nothing: no addresses left gives back the VM, its capacity and addresses', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'small:2:4:100:10', VRP_SIM_IP_POOL: '10.9.0.0/29' });
      try {
        await t.driver.create(spec(id(1), 1, 4));
        await assert.rejects(t.driver.create(spec(id(2), 1, 2)), permanent(/No free IPv4 address/));
        assert.equal(await t.driver.inspect(id(2)), undefined, 'no VM left');
        assert.equal((await t.held()).length, 4, 'only the first VM holds addresses');
        assert.equal((await t.host('small')).used_cpu, 1, 'its capacity is given back');
        assert.deepEqual((await t.driver.create(spec(id(3), 1, 1))).ips, ['10.9.0.6']);
      } finally {
        await t.cleanup();
      }
    });

    test('create is all-or-nothing: a permanent fault on a retried create gives everything back', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'small:2:4:100:10' });
      try {
        await t.driver.create(spec(id(1), 2, 2));
        // The job runs again (its first run crashed before it recorded the result) and the host refuses.
        const faulty = await t.restart({ VRP_SIM_FAULTS: 'permanent=1' });
        await assert.rejects(faulty.create(spec(id(1), 2, 2)), permanent(/Simulated permanent fault/));
        assert.equal(await faulty.inspect(id(1)), undefined);
        assert.deepEqual(await t.held(), []);
        assert.equal((await t.host('small')).used_cpu, 0);
      } finally {
        await t.cleanup();
      }
    });

    test('pools are records: a changed pool setting at a restart changes nothing, the pool default keeps serving', async () => {
      const t = await simulated(kind, { VRP_SIM_IP_POOL: '10.9.0.0/29' });
      try {
        const old = await t.driver.create(spec(id(1), 1, 1));
        assert.deepEqual(old.ips, ['10.9.0.2']);
        const driver = await t.restart({ VRP_SIM_IP_POOL: '10.10.0.0/29' });
        const vms = [];
        for (let i = 2; i <= 5; i++) vms.push(await driver.create(spec(id(i), 1, 1)));
        assert.deepEqual(
          vms.flatMap((v) => v.ips),
          ['10.9.0.3', '10.9.0.4', '10.9.0.5', '10.9.0.6'],
        );
        await assert.rejects(
          driver.create(spec(id(7), 1, 1)),
          permanent(/No free IPv4 address in pool 10.9.0.0\/29/),
        );
        assert.deepEqual((await driver.inspect(id(1)))?.ips, ['10.9.0.2'], 'the address in use stays');
        const pools = (await t.store.db.selectFrom('ip_pools').select(['name', 'network']).execute()).map(
          (r) => ({ ...r }),
        );
        assert.deepEqual(pools, [{ name: 'default', network: '10.9.0.0/29' }]);
      } finally {
        await t.cleanup();
      }
    });

    test('resize is all-or-nothing: without addresses neither the size nor the reservation changes', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'small:4:8:100:10', VRP_SIM_IP_POOL: '10.9.0.0/29' });
      try {
        await t.driver.create(spec(id(1), 1, 1));
        await assert.rejects(
          t.driver.resize(id(1), { cpu: 2, ramGb: 2, diskGb: 20, ipCount: 6 }),
          permanent(/No free IPv4 address/),
        );
        const vm = await t.driver.inspect(id(1));
        assert.deepEqual([vm?.cpu, vm?.ramGb, vm?.diskGb, vm?.ips.length], [1, 1, 10, 1]);
        const host = await t.host('small');
        assert.deepEqual([host.used_cpu, host.used_ram_gb, host.used_disk_gb], [1, 1, 10]);
        assert.equal((await t.held()).length, 1);
      } finally {
        await t.cleanup();
      }
    });

    test('resize: concurrent resizes of one VM leave the reservation equal to its size', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'small:8:8:100:10' });
      try {
        await t.driver.create(spec(id(1), 1, 1));
        await Promise.allSettled([
          t.driver.resize(id(1), { cpu: 2, ramGb: 1, diskGb: 10, ipCount: 1 }),
          t.driver.resize(id(1), { cpu: 3, ramGb: 1, diskGb: 10, ipCount: 1 }),
        ]);
        const vm = await t.driver.inspect(id(1));
        assert.equal((await t.host('small')).used_cpu, vm?.cpu);
      } finally {
        await t.cleanup();
      }
    });

    test('the hosts setting seeds a fresh store only: a restart with another list changes no host', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'old-host:64:256:1000:10' });
      try {
        assert.equal((await t.driver.create(spec(id(1)))).hostId, 'old-host');
        const driver = await t.restart({ VRP_SIM_HOSTS: 'new-host:8:16:100:10' });
        assert.equal((await driver.create(spec(id(2)))).hostId, 'old-host');
        await assert.rejects(t.host('new-host'), /no result/i, 'the store has no host new-host');
        assert.equal((await t.host('old-host')).cpu, 64, 'the capacity stays as stored');
        await assert.rejects(driver.create(spec(id(3), 64)), permanent(/No host has room/));
        assert.equal(await driver.inspect(id(3)), undefined);
      } finally {
        await t.cleanup();
      }
    });

    test('frees are unconditional: capacity lowered below what is in use still gets it all back', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'h:4:8:100:10' });
      try {
        await t.driver.create(spec(id(1), 2));
        await t.driver.create(spec(id(2), 2));
        // A backup into the backup store takes nothing on the host...
        const e = await t.driver.exportDisk(id(1), id(10), null);
        for await (const _ of e.runs);
        await e.commit();
        await e.close();
        assert.equal((await t.host('h')).used_backup_gb, 0, 'an export takes no backup storage on the host');
        // ...backups on the host are legacy ones (taken before the backup store), as a migrated store holds them.
        await legacySimBackup(t.store.db, id(1), id(11));
        await legacySimBackup(t.store.db, id(2), id(12));
        assert.ok((await t.host('h')).used_backup_gb > 0, 'legacy backups take backup storage on the host');
        const lowered = await t.restart({ VRP_SIM_HOSTS: 'h:1:1:1:1' });
        await lowered.deleteLegacyBackup(id(1), id(11));
        await lowered.destroy(id(1));
        await lowered.destroy(id(2));
        const host = await t.host('h');
        assert.deepEqual(
          [host.used_cpu, host.used_ram_gb, host.used_disk_gb, host.used_backup_gb],
          [0, 0, 0, 0],
        );
        const raised = await t.restart({ VRP_SIM_HOSTS: 'h:4:8:100:10' });
        assert.equal((await raised.create(spec(id(3), 4))).hostId, 'h');
      } finally {
        await t.cleanup();
      }
    });

    test('close: pending steps fail as transient and write nothing afterwards', async (ctx) => {
      const t = await simulated(kind, { VRP_SIMULATED_SPEED: '0.01' }); // a graceful stop takes 40 ms
      try {
        await t.driver.create(spec(id(1)));
        // The steps' timers are the test's from here: the stop cannot finish before the close,
        // however slow the machine, and the clock is run past its end afterwards.
        mockSetTimeout(ctx);
        const stopping = t.driver.stop(id(1), { timeoutMs: 120_000 });
        // Real I/O (the store read before the step) is not a timer; let it happen.
        for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
        await t.driver.close();
        // Past the end of every step: a step that the close did not fail would finish now.
        ctx.mock.timers.tick(60_000);
        await assert.rejects(stopping, (e: unknown) => e instanceof DriverError && e.transient);
        await assert.rejects(t.driver.reboot(id(1)), (e: unknown) => e instanceof DriverError && e.transient);
        ctx.mock.timers.reset();
        const other = await t.restart();
        assert.equal((await other.inspect(id(1)))?.power, 'running', 'the stop never reached the store');
      } finally {
        ctx.mock.timers.reset();
        await t.cleanup();
      }
    });

    test('fault injection: transient and permanent, and nothing half-done', async () => {
      const t1 = await simulated(kind, { VRP_SIM_FAULTS: 'transient=1' });
      try {
        await assert.rejects(
          t1.driver.create(spec(id(1))),
          (e: unknown) => e instanceof DriverError && e.transient,
        );
        assert.equal(await t1.driver.inspect(id(1)), undefined);
        assert.deepEqual(await t1.held(), []);
      } finally {
        await t1.cleanup();
      }
      const t2 = await simulated(kind, { VRP_SIM_FAULTS: 'permanent=1' });
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
      const t = await simulated(kind);
      try {
        await t.driver.create(spec(id(1)));
        await t.driver.stop(id(1), { timeoutMs: 1000 });
        const vm = await (await t.restart()).inspect(id(1));
        assert.equal(vm?.power, 'stopped');
        assert.equal(vm?.ips.length, 1);
      } finally {
        await t.cleanup();
      }
    });

    test('a non-zero speed takes time, speed 0 does not', async (ctx) => {
      const slow = await simulated(kind, { VRP_SIMULATED_SPEED: '0.02' });
      const instant = await simulated(kind, { VRP_SIMULATED_SPEED: '0' });
      try {
        // The steps' timers are the test's: time passes 10 ms per tick, and only so.
        mockSetTimeout(ctx);
        let ticked = 0;
        const creating = slow.driver.create(spec(id(1)));
        await waitUntil('the slow create to finish', async () => {
          if ((await promiseState(creating)) !== 'pending') return true;
          ctx.mock.timers.tick(10);
          ticked += 10;
          return false;
        });
        await creating;
        // Its two steps (clone the disk, boot) take 4 s each at speed 1.
        assert.ok(ticked >= 8000 * 0.02, `create takes 8 s times the speed; done after ${ticked} ms`);
        // At speed 0 it needs no time at all: done with no tick.
        const instantly = instant.driver.create(spec(id(2)));
        await waitUntil(
          'the speed-0 create to finish with no tick',
          async () => (await promiseState(instantly)) !== 'pending',
        );
        await instantly;
      } finally {
        ctx.mock.timers.reset();
        await slow.cleanup();
        await instant.cleanup();
      }
    });
  });

  describe(`simulated migration and outages (${kind})`, () => {
    const TWO_HOSTS = { VRP_SIM_HOSTS: 'a:8:16:200:10,b:8:8:200:10' };
    const used = async (t: Awaited<ReturnType<typeof simulated>>, hostId: string) => {
      const h = await t.host(hostId);
      return [h.used_cpu, h.used_ram_gb, h.used_disk_gb];
    };
    const vmRow = (t: Awaited<ReturnType<typeof simulated>>, vmId: string) =>
      t.store.db.selectFrom('sim_vms').selectAll().where('id', '=', vmId).executeTakeFirstOrThrow();
    const transient = (pattern: RegExp) => (e: unknown) =>
      e instanceof DriverError && e.transient && pattern.test(e.message);

    test('live and cold migration keep power, boots, addresses and content; the room moves', async () => {
      const t = await simulated(kind, TWO_HOSTS);
      try {
        const created = await t.driver.create(spec(id(1), 2));
        assert.equal(created.hostId, 'a', 'placed on the host with the most free RAM');
        const before = await vmRow(t, id(1));
        const live = await t.driver.migrate(id(1), 'b');
        assert.equal(live.hostId, 'b');
        assert.equal(live.power, 'running', 'a running VM moves live and keeps running');
        assert.deepEqual(live.ips, created.ips);
        const after = await vmRow(t, id(1));
        assert.equal(after.boot_count, before.boot_count, 'no reboot');
        assert.equal(after.content_generation, before.content_generation, 'the disk content moved along');
        assert.equal(after.migrating_to, null);
        assert.deepEqual(await used(t, 'a'), [0, 0, 0]);
        assert.deepEqual(await used(t, 'b'), [2, 1, 10]);

        await t.driver.stop(id(1), { timeoutMs: 120_000 });
        const cold = await t.driver.migrate(id(1), null);
        assert.equal(cold.hostId, 'a', 'the placement rule picks the other host');
        assert.equal(cold.power, 'stopped', 'a stopped VM moves cold and stays stopped');
        assert.deepEqual(cold.ips, created.ips);
        assert.deepEqual((await t.driver.inspect(id(1)))?.hostId, 'a');
        assert.deepEqual(await used(t, 'a'), [2, 1, 10]);
        assert.deepEqual(await used(t, 'b'), [0, 0, 0]);
        await assert.rejects(t.driver.migrate(id(1), 'a'), permanent(/already on that host/));
      } finally {
        await t.cleanup();
      }
    });

    test('two migrations to a host with room for one: one fails with the reason, nothing overbooked', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'a:8:16:200:10,b:1:1:10:10' });
      try {
        await t.driver.create(spec(id(1)));
        await t.driver.create(spec(id(2)));
        const results = await Promise.allSettled([
          t.driver.migrate(id(1), 'b'),
          t.driver.migrate(id(2), 'b'),
        ]);
        const ok = results.filter((r) => r.status === 'fulfilled');
        const refused = results.filter((r) => r.status === 'rejected');
        assert.equal(ok.length, 1);
        assert.equal(refused.length, 1);
        assert.ok(
          permanent(/Host b has no room for the server/)(refused[0]?.reason),
          String(refused[0]?.reason),
        );
        assert.deepEqual(await used(t, 'b'), [1, 1, 10], 'b holds exactly one');
        assert.deepEqual(await used(t, 'a'), [1, 1, 10], 'a holds the one that stayed');
        const rows = await t.store.db.selectFrom('sim_vms').select(['host_id', 'migrating_to']).execute();
        assert.deepEqual(rows.map((r) => r.host_id).sort(), ['a', 'b']);
        assert.ok(rows.every((r) => r.migrating_to === null));
      } finally {
        await t.cleanup();
      }
    });

    test('a destination that stops answering before the switch-over: the VM stays whole on the source', async () => {
      const t = await simulated(kind, TWO_HOSTS);
      const driver = createSimulatedDriver({
        db: t.store.db,
        ipPool: await createIpPool(t.store.db, '10.80.0.0/24', Date.now),
        faults: { transient: 0, permanent: 0 },
        speed: 0,
        beforeMigrationEnds: (_vmId, to) => outside.hostDown(t.store.db, to),
      });
      try {
        const created = await driver.create(spec(id(1)));
        await assert.rejects(driver.migrate(id(1), 'b'), transient(/Host b does not answer/));
        const row = await vmRow(t, id(1));
        assert.equal(row.host_id, 'a');
        assert.equal(row.migrating_to, null);
        assert.equal(row.power, 'running');
        assert.deepEqual(await used(t, 'b'), [0, 0, 0], 'nothing left reserved on the destination');
        assert.deepEqual(await used(t, 'a'), [1, 1, 10]);
        // Asked again while b is down: refused before anything is copied, nothing kept either.
        await assert.rejects(driver.migrate(id(1), 'b'), transient(/Host b does not answer/));
        assert.deepEqual(await used(t, 'b'), [0, 0, 0]);
        await outside.hostUp(t.store.db, 'b');
        assert.equal((await t.driver.migrate(id(1), 'b')).hostId, 'b');
        assert.deepEqual((await t.driver.inspect(id(1)))?.ips, created.ips);
      } finally {
        await driver.close();
        await t.cleanup();
      }
    });

    test('a crash mid-migration: a re-run finishes on the destination it reserved, room right on both', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'a:8:16:200:10,b:8:8:200:10,c:8:4:200:10' });
      const crashing = createSimulatedDriver({
        db: t.store.db,
        ipPool: await createIpPool(t.store.db, '10.80.0.0/24', Date.now),
        faults: { transient: 0, permanent: 0 },
        speed: 0,
        // The process dies with everything copied: nothing more is written.
        beforeMigrationEnds: () => crashing.close(),
      });
      try {
        await t.driver.create(spec(id(1)));
        await assert.rejects(crashing.migrate(id(1), null), transient(/closed/));
        assert.equal((await vmRow(t, id(1))).migrating_to, 'b', 'the reservation is recorded');
        assert.deepEqual(await used(t, 'b'), [1, 1, 10]);
        // The re-run continues with the destination reserved, whatever the placement says now.
        const done = await t.driver.migrate(id(1), null);
        assert.equal(done.hostId, 'b');
        assert.equal((await vmRow(t, id(1))).migrating_to, null);
        assert.deepEqual(await used(t, 'a'), [0, 0, 0]);
        assert.deepEqual(await used(t, 'b'), [1, 1, 10]);
        assert.deepEqual(await used(t, 'c'), [0, 0, 0]);
      } finally {
        await t.cleanup();
      }
    });

    /** A migration of `vmId` to `to` whose process died with everything copied: the reservation stays recorded. */
    async function crashedMove(t: Awaited<ReturnType<typeof simulated>>, vmId: string, to: string | null) {
      const crashing = createSimulatedDriver({
        db: t.store.db,
        ipPool: await createIpPool(t.store.db, '10.80.0.0/24', Date.now),
        faults: { transient: 0, permanent: 0 },
        speed: 0,
        beforeMigrationEnds: () => crashing.close(),
      });
      await assert.rejects(crashing.migrate(vmId, to));
      return (await vmRow(t, vmId)).migrating_to;
    }

    for (const [change, set, reason] of [
      [
        'unreachable',
        { health: 'unreachable' },
        /Host b does not answer; the migration under way was undone/,
      ],
      ['draining', { state: 'draining' }, /Host b is draining; the migration under way was undone/],
      ['evacuating', { state: 'evacuating' }, /Host b is evacuating; the migration under way was undone/],
    ] as const)
      test(`a re-run whose reserved destination became ${change} gives the reservation back and fails`, async () => {
        const t = await simulated(kind, TWO_HOSTS);
        try {
          await t.driver.create(spec(id(1)));
          assert.equal(await crashedMove(t, id(1), 'b'), 'b');
          await t.store.db.updateTable('hypervisor_hosts').set(set).where('id', '=', 'b').execute();
          // Whether the re-run names the host or lets the placement pick: the reservation is checked.
          await assert.rejects(
            t.driver.migrate(id(1), change === 'draining' ? null : 'b'),
            permanent(reason),
          );
          const row = await vmRow(t, id(1));
          assert.equal(row.host_id, 'a');
          assert.equal(row.migrating_to, null);
          assert.equal(row.power, 'running');
          assert.deepEqual(await used(t, 'b'), [0, 0, 0]);
          assert.deepEqual(await used(t, 'a'), [1, 1, 10]);
        } finally {
          await t.cleanup();
        }
      });

    test('a migration left under way: abandoned, it is undone; destroyed, both hosts get their room back', async () => {
      const t = await simulated(kind, TWO_HOSTS);
      try {
        await t.driver.create(spec(id(1)));
        await t.driver.create(spec(id(2)));
        assert.equal(await crashedMove(t, id(1), 'b'), 'b');
        assert.equal(await crashedMove(t, id(2), 'b'), 'b');
        assert.deepEqual(await used(t, 'b'), [2, 2, 20]);
        await t.driver.abandonMigration(id(1));
        const row = await vmRow(t, id(1));
        assert.deepEqual([row.host_id, row.migrating_to, row.power], ['a', null, 'running']);
        assert.deepEqual(await used(t, 'b'), [1, 1, 10]);
        await t.driver.abandonMigration(id(1));
        assert.deepEqual(await used(t, 'b'), [1, 1, 10], 'nothing to do once undone');
        await t.driver.destroy(id(2));
        assert.deepEqual(await used(t, 'b'), [0, 0, 0]);
        assert.deepEqual(await used(t, 'a'), [1, 1, 10]);
      } finally {
        await t.cleanup();
      }
    });

    test('disk export and import: real bytes, incremental since a checkpoint, nothing changed by a bad source', async () => {
      const t = await simulated(kind);
      try {
        const d = t.driver;
        const collect = async (runs: AsyncIterable<DiskRun>) => {
          const out: DiskRun[] = [];
          for await (const r of runs) out.push({ offset: r.offset, data: Buffer.from(r.data) });
          return out;
        };
        const replay = async function* (runs: DiskRun[]) {
          yield* runs;
        };
        await d.create(spec(id(1)));
        await d.create(spec(id(2)));
        for (let i = 0; i < 3; i++) await d.reboot(id(1));
        const at4 = (await d.inspect(id(1)))!.diskRevision;

        const full = await d.exportDisk(id(1), 'b1', null);
        assert.deepEqual([full.kind, full.since, full.diskBytes], ['full', null, 10 * 1024 ** 3]);
        const fullRuns = await collect(full.runs);
        await full.commit();
        await full.close();
        assert.equal(fullRuns[0]?.offset, 0, 'the header comes first');
        for (let i = 1; i < fullRuns.length; i++) {
          const prev = fullRuns[i - 1]!;
          assert.ok(fullRuns[i]!.offset >= prev.offset + prev.data.length, 'ascending, not overlapping');
        }
        assert.ok(fullRuns.length >= 2);

        await d.reboot(id(1));
        const inc = await d.exportDisk(id(1), 'b2', 'b1');
        assert.deepEqual([inc.kind, inc.since], ['incremental', 'b1']);
        const incRuns = await collect(inc.runs);
        await inc.commit();
        await inc.close();
        assert.equal(incRuns.length, 2, 'the header and the one run written since');
        const unknown = await d.exportDisk(id(1), 'b3', 'no-such-checkpoint');
        assert.equal(unknown.kind, 'full', 'an unknown checkpoint: a full export');
        await unknown.close();
        await d.dropCheckpoint(id(1), 'b2');
        await d.dropCheckpoint(id(1), 'b2');
        const dropped = await d.exportDisk(id(1), 'b4', 'b2');
        assert.equal(dropped.kind, 'full', 'a dropped checkpoint: a full export');
        await dropped.close();

        const at5 = (await d.inspect(id(1)))!.diskRevision;
        const failing = async function* () {
          yield fullRuns[0]!;
          throw new Error('the source broke');
        };
        await assert.rejects(d.importDisk(id(1), full.diskBytes, failing()), /the source broke/);
        const damaged = fullRuns.map((r, i) =>
          i === 1 ? { offset: r.offset, data: Buffer.from(r.data) } : r,
        );
        damaged[1]!.data[7] = (damaged[1]!.data[7] ?? 0) ^ 1;
        await assert.rejects(
          d.importDisk(id(1), full.diskBytes, replay(damaged)),
          permanent(/not a disk of it/),
        );
        await assert.rejects(
          d.importDisk(id(2), full.diskBytes, replay(fullRuns)),
          permanent(/not a disk of it/),
        );
        assert.equal((await d.inspect(id(1)))!.diskRevision, at5, 'nothing changed');

        await d.importDisk(id(1), full.diskBytes, replay(fullRuns));
        const restored = (await d.inspect(id(1)))!;
        assert.equal(restored.diskRevision, at4, 'the disk is as the full export took it');
        assert.equal(restored.power, 'running', 'the power state is as it was');
        const afterImport = await d.exportDisk(id(1), 'b5', 'b1');
        assert.equal(afterImport.kind, 'full', 'an imported disk has no checkpoints');
        assert.deepEqual(await collect(afterImport.runs), fullRuns, 'and reads as the bytes imported');
        await afterImport.close();

        await outside.hostDown(t.store.db, (await d.inspect(id(1)))!.hostId);
        await assert.rejects(
          d.exportDisk(id(1), 'b6', null),
          (e: unknown) => e instanceof DriverError && e.transient,
        );
      } finally {
        await t.cleanup();
      }
    });

    test('reinstall: the bytes of a fresh disk of the template; an outage, a fault or a close changes nothing', async (ctx) => {
      const t = await simulated(kind, { VRP_SIMULATED_SPEED: '0.01' });
      const login = (templateId: string) => ({
        templateId,
        hostname: 'again.example.com',
        username: 'root',
        password: 'Again-pass-1',
        sshKeys: [],
      });
      const header = async (d: HypervisorDriver, vmId: string) => {
        const e = await d.exportDisk(vmId, `${vmId}-h`, null);
        const runs: DiskRun[] = [];
        for await (const r of e.runs) runs.push(r);
        await e.close();
        const json = runs[0]!.data.subarray(0, runs[0]!.data.indexOf(0)).toString('utf8');
        const { vm, ...rest } = JSON.parse(json) as Record<string, unknown>;
        return { vm, rest, runs: runs.length, diskBytes: e.diskBytes };
      };
      try {
        const d = t.driver;
        await d.create(spec(id(1)));
        for (let i = 0; i < 3; i++) await d.reboot(id(1));
        const written = (await d.inspect(id(1)))!;
        const hostId = written.hostId;

        await outside.hostDown(t.store.db, hostId);
        await assert.rejects(d.reinstall(id(1), login('u')), transient(/does not answer/));
        await outside.hostUp(t.store.db, hostId);
        const faulty = await t.restart({ VRP_SIM_FAULTS: 'permanent=1' });
        await assert.rejects(faulty.reinstall(id(1), login('u')), permanent(/Simulated permanent fault/));
        // Closed while the disk is being rebuilt: nothing is written.
        mockSetTimeout(ctx);
        const closing = await t.restart({ VRP_SIMULATED_SPEED: '0.01' });
        const reinstalling = closing.reinstall(id(1), login('u'));
        for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
        await closing.close();
        ctx.mock.timers.tick(60_000);
        await assert.rejects(reinstalling, (e: unknown) => e instanceof DriverError && e.transient);
        ctx.mock.timers.reset();
        assert.equal((await d.inspect(id(1)))!.diskRevision, written.diskRevision, 'nothing changed');

        // The disk a fresh VM of template u has, at this VM's size (10 GB).
        await d.create({ ...spec(id(2)), templateId: 'u', diskGb: 20 });
        const reinstalled = await d.reinstall(id(1), login('u'));
        assert.equal(reinstalled.power, 'running');
        assert.deepEqual(reinstalled.ips, written.ips);
        assert.equal(reinstalled.hostId, hostId);
        const mine = await header(d, id(1));
        const fresh = await header(d, id(2));
        assert.deepEqual(mine.rest, fresh.rest, 'generation and used space of a fresh disk of u');
        assert.equal(mine.runs, fresh.runs, 'the fresh disk’s runs only');
        assert.equal(mine.diskBytes, 10 * 1024 ** 3, 'at the VM’s own size');
        assert.equal((await vmRow(t, id(1))).hostname, 'again.example.com');
      } finally {
        ctx.mock.timers.reset();
        await t.cleanup();
      }
    });

    test('rescue: the rescue system runs with the own disk untouched; its end boots the own system', async () => {
      const t = await simulated(kind);
      try {
        await t.driver.create(spec(id(1)));
        const before = await vmRow(t, id(1));
        const rescued = await t.driver.rescue(id(1), { username: 'root', password: 'Rescue-pass-1' });
        assert.equal(rescued.power, 'running');
        const inRescue = await vmRow(t, id(1));
        assert.notEqual(inRescue.rescue_password_hash, null, 'the VM is marked in rescue');
        assert.notEqual(inRescue.rescue_password_hash, before.password_hash);
        assert.equal(inRescue.content_generation, before.content_generation, 'its own disk is untouched');
        assert.equal(inRescue.password_hash, before.password_hash, 'its own login is untouched');
        const back = await t.driver.unrescue(id(1), 'running');
        assert.equal(back.power, 'running');
        const after = await vmRow(t, id(1));
        assert.equal(after.rescue_password_hash, null);
        assert.equal(after.boot_count, before.boot_count + 2, 'the rescue system booted, then its own');
        // Not in rescue, unrescue only brings the power state.
        assert.equal((await t.driver.unrescue(id(1), 'stopped')).power, 'stopped');
        assert.equal((await vmRow(t, id(1))).boot_count, after.boot_count);
      } finally {
        await t.cleanup();
      }
    });

    test('a host whose storage fills up pauses its running VMs; a resume, start or boot there pauses again; once it has room they run', async () => {
      const t = await simulated(kind, TWO_HOSTS);
      try {
        const db = t.store.db;
        for (const n of [1, 2, 3]) await t.driver.create(spec(id(n)));
        await t.driver.stop(id(3), { timeoutMs: 120_000 });
        assert.deepEqual((await t.driver.powerStates('a')).size, 3, 'all on a');
        const pauses = async (hostId: string) => {
          const p = await t.driver.pausedByDiskErrors!(hostId);
          return {
            paused: Object.fromEntries([...p.paused].map(([vm, e]) => [vm, e.error])),
            room: p.storageHasRoom,
          };
        };
        assert.deepEqual(await pauses('a'), { paused: {}, room: false });

        await outside.storageFull(db, 'a');
        assert.deepEqual(await pauses('a'), {
          paused: { [id(1)]: 'no_space', [id(2)]: 'no_space' },
          room: false,
        });
        assert.deepEqual(await pauses('b'), { paused: {}, room: false });
        // A paused VM holds its resources and resumes where it was: it counts as running.
        assert.equal((await t.driver.powerStates('a')).get(id(1)), 'running');
        assert.equal((await t.driver.inspect(id(1)))?.power, 'running');
        // Resumed while the storage is full, its write fails again: paused again.
        await t.driver.resumePaused!(id(1));
        assert.deepEqual(Object.keys((await pauses('a')).paused).sort(), [id(1), id(2)].sort());
        assert.equal((await t.driver.start(id(1))).power, 'running');
        assert.deepEqual(Object.keys((await pauses('a')).paused).sort(), [id(1), id(2)].sort());
        // A paused guest's agent answers nothing: a new password waits for the next boot.
        assert.equal(await t.driver.setPassword(id(1), 'root', 'Other-pass-2'), 'next_boot');
        // A VM booted there writes at once: paused too.
        await t.driver.start(id(3));
        assert.deepEqual(Object.keys((await pauses('a')).paused).sort(), [id(1), id(2), id(3)].sort());
        // Its stop resumes it and the guest pauses again: forced off (its shutdown writes nothing).
        const before = (await vmRow(t, id(2))).content_generation;
        assert.equal((await t.driver.stop(id(2), { timeoutMs: 120_000 })).power, 'stopped');
        assert.equal((await vmRow(t, id(2))).content_generation, before, 'forced off, not shut down');
        assert.deepEqual(Object.keys((await pauses('a')).paused).sort(), [id(1), id(3)].sort());

        // Room again: they stay paused until resumed (QEMU retries only then); a start resumes too.
        await outside.storageFreed(db, 'a');
        assert.deepEqual(await pauses('a'), {
          paused: { [id(1)]: 'no_space', [id(3)]: 'no_space' },
          room: true,
        });
        const boots = (await vmRow(t, id(1))).boot_count;
        await t.driver.resumePaused!(id(1));
        assert.equal((await vmRow(t, id(1))).boot_count, boots, 'resumed, not booted again');
        await t.driver.start(id(3));
        assert.deepEqual(await pauses('a'), { paused: {}, room: false });

        // A write that fails otherwise: paused for it; a reboot resumes it, a stopped VM writes nothing.
        assert.equal(await outside.diskFails(db, id(1)), true);
        assert.equal(await outside.diskFails(db, id(2)), true);
        assert.equal(await outside.diskFails(db, id(99)), false);
        assert.deepEqual(await pauses('a'), { paused: { [id(1)]: 'io_error' }, room: false });
        await t.driver.reboot(id(1));
        assert.deepEqual(await pauses('a'), { paused: {}, room: false });

        // The pause moves with a live migration, and is settled on its destination.
        await outside.diskFails(db, id(1));
        await t.driver.migrate(id(1), 'b');
        assert.deepEqual(await pauses('b'), { paused: { [id(1)]: 'io_error' }, room: false });
        // Rebuilt or resized on a host whose storage is full, its guest boots and is paused for it.
        await outside.storageFull(db, 'b');
        await t.driver.reinstall(id(1), { ...spec(id(1)), sshKeys: [] });
        assert.deepEqual(await pauses('b'), { paused: { [id(1)]: 'no_space' }, room: false });
        await outside.storageFreed(db, 'b');
        await t.driver.resize(id(1), { cpu: 2, ramGb: 1, diskGb: 10, ipCount: 1 });
        assert.deepEqual(await pauses('b'), { paused: {}, room: false });
        // A power-off ends a pause as a stop does, the driver's or the guest's own.
        await outside.diskFails(db, id(3));
        await t.driver.powerOff(id(3));
        assert.equal((await vmRow(t, id(3))).disk_error, null);
        await t.driver.start(id(3));
        await outside.diskFails(db, id(3));
        await outside.powerOff(db, id(3));
        assert.equal((await vmRow(t, id(3))).disk_error, null);
        // Started by hand on a host whose storage is full, it is paused at once; a new server's
        // first boot is not (its disk was just made).
        await outside.storageFull(db, 'a');
        await outside.powerOn(db, id(3));
        assert.equal((await vmRow(t, id(3))).disk_error, 'no_space');
        await t.driver.create(spec(id(5)));
        assert.equal((await vmRow(t, id(5))).disk_error, null);
        await outside.storageFreed(db, 'a');
        // A restore is a boot again for a running VM: the pause goes where there is room, and an
        // unrescue asked to run resumes one paused.
        await outside.diskFails(db, id(5));
        const exported = await t.driver.exportDisk(id(5), id(50), null);
        await t.driver.importDisk(id(5), exported.diskBytes, exported.runs);
        await exported.close();
        assert.equal((await vmRow(t, id(5))).disk_error, null);
        await outside.diskFails(db, id(5));
        await t.driver.unrescue(id(5), 'running');
        assert.equal((await vmRow(t, id(5))).disk_error, null);

        await outside.hostDown(db, 'a');
        await assert.rejects(t.driver.pausedByDiskErrors!('a'), transient(/Host a does not answer/));
        await assert.rejects(t.driver.resumePaused!(id(3)), transient(/Host a does not answer/));
      } finally {
        await t.cleanup();
      }
    });

    test("a host's reboot starts the VMs marked to start with it: the driver marks those it leaves running, unmarks those it stops", async () => {
      const t = await simulated(kind, TWO_HOSTS);
      try {
        const db = t.store.db;
        for (const n of [1, 2, 3, 4]) await t.driver.create(spec(id(n)));
        const marked = async (hostId: string) => [...(await t.driver.startingWithHost!(hostId))].sort();
        const powers = async (...ns: number[]) =>
          Promise.all(ns.map(async (n) => (await t.driver.inspect(id(n)))?.power));
        const boots = async (...ns: number[]) =>
          Promise.all(ns.map(async (n) => (await vmRow(t, id(n))).boot_count));
        assert.deepEqual(await marked('a'), [id(1), id(2), id(3), id(4)].sort(), 'created running: marked');
        await t.driver.stop(id(2), { timeoutMs: 120_000 });
        await t.driver.powerOff(id(3));
        await t.driver.rescue(id(4), { username: 'root', password: 'Rescue-pass-1' });
        assert.deepEqual(await marked('a'), [id(1)], 'stopped, powered off, in rescue: unmarked');
        // A guest that shuts itself down keeps its mark, as on libvirt: the host's boot starts it.
        await t.driver.start(id(2));
        await outside.powerOff(db, id(2));
        assert.deepEqual(await marked('a'), [id(1), id(2)].sort());

        const before = await boots(1, 2, 3);
        await outside.hostReboot(db, 'a');
        assert.deepEqual(await powers(1, 2, 3, 4), ['running', 'running', 'stopped', 'stopped']);
        assert.deepEqual(await boots(1, 2, 3), [before[0]! + 1, before[1]! + 1, before[2]!]);
        assert.equal(
          (await vmRow(t, id(4))).rescue_password_hash,
          null,
          'the rescue system is gone with the boot',
        );
        // Out of rescue, its own system running: marked again.
        await t.driver.rescue(id(4), { username: 'root', password: 'Rescue-pass-1' });
        await t.driver.unrescue(id(4), 'running');
        assert.deepEqual(await marked('a'), [id(1), id(2), id(4)].sort());
        // In rescue and marked by hand: the host's boot starts its own system.
        await t.driver.rescue(id(4), { username: 'root', password: 'Rescue-pass-1' });
        await outside.startWithHost(db, id(4), true);
        await outside.hostReboot(db, 'a');
        const own = await vmRow(t, id(4));
        assert.deepEqual([own.power, own.rescue_password_hash], ['running', null]);

        // Marks set by hand, and through the driver (the reconciler's setStartWithHost).
        assert.equal(await outside.startWithHost(db, id(1), false), true);
        assert.equal(await outside.startWithHost(db, id(99), true), false);
        await t.driver.setStartWithHost!(id(3), true);
        assert.deepEqual(await marked('a'), [id(2), id(3), id(4)].sort());
        // On a host whose storage is full, those it starts are paused at once.
        await outside.storageFull(db, 'a');
        await outside.hostReboot(db, 'a');
        assert.deepEqual(await powers(1, 2, 3, 4), ['stopped', 'running', 'running', 'running']);
        const paused = await t.driver.pausedByDiskErrors!('a');
        assert.deepEqual([...paused.paused.keys()].sort(), [id(2), id(3), id(4)].sort());
        await outside.storageFreed(db, 'a');
        // A reboot through the driver marks; a live move carries the mark to the destination.
        await t.driver.reboot(id(1));
        await t.driver.migrate(id(2), 'b');
        assert.deepEqual(await marked('a'), [id(1), id(3), id(4)].sort());
        assert.deepEqual(await marked('b'), [id(2)]);

        // Each power command leaves the mark as libvirt's start (marks) and stop (unmarks) do.
        const hasMark = async (n: number) => (await marked('a')).includes(id(n));
        for (const marks of [
          () => t.driver.start(id(1)),
          () => t.driver.resize(id(1), { cpu: 2, ramGb: 1, diskGb: 10, ipCount: 1 }),
          () => t.driver.reinstall(id(1), { ...spec(id(1)), sshKeys: [] }),
          () => t.driver.unrescue(id(1), 'running'),
        ]) {
          await outside.startWithHost(db, id(1), false);
          await marks();
          assert.equal(await hasMark(1), true, String(marks));
        }
        await outside.startWithHost(db, id(1), false);
        await outside.diskFails(db, id(1));
        await t.driver.resumePaused!(id(1));
        assert.equal(await hasMark(1), false, 'a resume leaves the mark as it was');
        for (const unmarks of [
          () => t.driver.stop(id(1), { timeoutMs: 120_000 }),
          () => t.driver.powerOff(id(1)),
          () => t.driver.unrescue(id(1), 'stopped'),
          async () => t.driver.setStartWithHost!(id(1), false),
        ]) {
          // Shut down by its guest, which keeps its mark.
          await t.driver.start(id(1));
          await outside.powerOff(db, id(1));
          assert.equal(await hasMark(1), true);
          await unmarks();
          assert.equal(await hasMark(1), false, String(unmarks));
        }
        // A cold move arrives unmarked; the reboot of one host leaves the other's VMs as they were.
        await t.driver.start(id(1));
        await outside.powerOff(db, id(1));
        await t.driver.migrate(id(1), 'b');
        assert.deepEqual(await marked('b'), [id(2)]);
        const onB = (await vmRow(t, id(2))).boot_count;
        await outside.hostReboot(db, 'a');
        assert.equal((await vmRow(t, id(2))).boot_count, onB);
        assert.equal((await t.driver.inspect(id(1)))?.power, 'stopped');

        await outside.hostDown(db, 'a');
        await assert.rejects(t.driver.startingWithHost!('a'), transient(/Host a does not answer/));
        await assert.rejects(t.driver.setStartWithHost!(id(3), false), transient(/Host a does not answer/));
      } finally {
        await t.cleanup();
      }
    });

    test('a host with an outage answers nothing: operations, listing and probe fail as transient', async () => {
      const t = await simulated(kind, { VRP_SIM_HOSTS: 'a:8:16:200:10' });
      try {
        await t.driver.create(spec(id(1)));
        await t.driver.probe('a');
        await outside.hostDown(t.store.db, 'a');
        const down = transient(/Host a does not answer/);
        await assert.rejects(t.driver.probe('a'), down);
        await assert.rejects(t.driver.powerStates('a'), down);
        await assert.rejects(t.driver.stop(id(1), { timeoutMs: 0 }), down);
        await assert.rejects(t.driver.start(id(1)), down);
        await assert.rejects(t.driver.inspect(id(1)), down);
        await assert.rejects(t.driver.destroy(id(1)), down);
        await assert.rejects(t.driver.exportDisk(id(1), id(50), null), down);
        await assert.rejects(t.driver.importDisk(id(1), 10 * 1024 ** 3, (async function* () {})()), down);
        await assert.rejects(t.driver.dropCheckpoint(id(1), id(50)), down);
        await assert.rejects(t.driver.restoreLegacyBackup(id(1), id(50)), down);
        await assert.rejects(t.driver.rescue(id(1), { username: 'root', password: 'Rescue-pass-1' }), down);
        await assert.rejects(t.driver.unrescue(id(1), 'running'), down);
        // A new server placed on it is not booted (nor given up: the retry boots it).
        await assert.rejects(t.driver.create(spec(id(2))), down);
        assert.equal((await vmRow(t, id(1))).power, 'running', 'its VMs keep their state');
        await outside.hostUp(t.store.db, 'a');
        await t.driver.probe('a');
        assert.equal((await t.driver.create(spec(id(2)))).power, 'running');
        assert.equal((await t.driver.powerStates('a')).size, 2);
      } finally {
        await t.cleanup();
      }
    });
  });
}

test('VRP_SIM_IP_POOL: larger than a /12 is refused, naming the setting', () => {
  assert.equal(loadConfig({ VRP_SIM_IP_POOL: '10.0.0.0/12' }).simulatedIpPool, '10.0.0.0/12');
  assert.throws(
    () => loadConfig({ VRP_SIM_IP_POOL: '10.0.0.0/11' }),
    (e: unknown) => e instanceof ConfigError && /VRP_SIM_IP_POOL/.test(e.message) && /\/12/.test(e.message),
  );
});
