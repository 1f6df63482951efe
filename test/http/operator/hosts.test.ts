import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { freeBackupSpace, placeVm, reserveBackupSpace } from '../../../src/drivers/hosts.ts';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import type { Database } from '../../../src/store/schema.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };

/** A libvirt driver's row of a VM, as placement records it. */
const libvirtVm = (id: string) => ({
  table: 'libvirt_vms' as const,
  row: { id, hostname: `${id}.example.com`, cpu: 1, ram_gb: 1, disk_gb: 10, created_at: Date.now() },
});
const hostOf = async (db: Kysely<Database>, vmId: string) =>
  (await db.selectFrom('libvirt_vms').select('host_id').where('id', '=', vmId).executeTakeFirst())?.host_id;

for (const store of testStores()) {
  describe(`operator API: hosts (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let acme: string;

    before(async () => {
      t = await createTestApp({}, { store, worker: true });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
    });
    after(() => t.close());

    async function provision(domain: string): Promise<string> {
      const res = await call(t, acme, 'POST', 'service/create-order', smallOrder(domain), B);
      const id = res.body.data[0].service_id;
      assert.equal((await call(t, acme, 'POST', `service/${id}/create`, undefined, B)).status, 200);
      return id;
    }

    test('the list shows each configured host: driver, state, capacity, use, free room, VMs', async () => {
      const res = await opsCall(t, ops, 'GET', 'hosts');
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.data.items.map((h: any) => [h.host_id, h.driver, h.state]),
        [
          ['sim-host-1', 'simulated', 'active'],
          ['sim-host-2', 'simulated', 'active'],
        ],
      );
      const id = await provision('counted.example.com');
      await waitForStatus(t, acme, id, 'running');
      const after = (await opsCall(t, ops, 'GET', 'hosts')).body.data.items;
      const used = after.find((h: any) => h.services === 1);
      assert.ok(used, JSON.stringify(after));
      assert.equal(used.used.cpu, 1);
      assert.equal(used.free.cpu, used.capacity.cpu - 1);
      assert.equal(used.free.ram_gb, used.capacity.ram_gb - 1);
      const paged = await opsCall(t, ops, 'GET', 'hosts?limit=1');
      assert.equal(paged.body.data.items.length, 1);
      const next = await opsCall(t, ops, 'GET', `hosts?limit=1&cursor=${paged.body.data.next_cursor}`);
      assert.equal(next.body.data.items[0].host_id, 'sim-host-2');
      assert.equal(next.body.data.next_cursor, null);
    });

    test('a draining host gets no new servers; the one still active gets them all; activate undoes it', async () => {
      const drained = await opsCall(t, ops, 'POST', 'hosts/sim-host-1/drain');
      assert.equal(drained.status, 200);
      assert.equal(drained.body.data.state, 'draining');
      const ids = [];
      for (let i = 0; i < 4; i++) ids.push(await provision(`drain${i}.example.com`));
      for (const id of ids) {
        await waitForStatus(t, acme, id, 'running');
        assert.equal((await opsCall(t, ops, 'GET', `services/${id}`)).body.data.host.host_id, 'sim-host-2');
      }
      // Both drained: nothing can be placed; the create fails with the reason.
      await opsCall(t, ops, 'POST', 'hosts/sim-host-2/drain');
      const stuck = await provision('nowhere.example.com');
      await waitForStatus(t, acme, stuck, 'failed');
      const jobs = await call(t, acme, 'GET', `service/${stuck}/jobs`, undefined, B);
      assert.match(jobs.body.data[0].error, /No host has room/);
      // Servers on a draining host keep working.
      assert.equal((await call(t, acme, 'POST', `service/${ids[0]}/stop`, undefined, B)).status, 200);
      await waitForStatus(t, acme, ids[0]!, 'stopped');

      const active = await opsCall(t, ops, 'POST', 'hosts/sim-host-1/activate');
      assert.equal(active.body.data.state, 'active');
      await opsCall(t, ops, 'POST', 'hosts/sim-host-2/activate');
      assert.equal((await call(t, acme, 'POST', `service/${stuck}/create`, undefined, B)).status, 200);
      await waitForStatus(t, acme, stuck, 'running');
    });

    test('placement itself, which both drivers call, skips draining hosts', async () => {
      const db = t.ctx.store.db;
      await libvirtHosts(db, [
        { id: 'kvm-a', cpu: 8, ramGb: 16, diskGb: 200 },
        { id: 'kvm-b', cpu: 8, ramGb: 8, diskGb: 200 },
      ]);
      await db.updateTable('hypervisor_hosts').set({ state: 'draining' }).where('id', '=', 'kvm-a').execute();
      const need = { cpu: 1, ramGb: 1, diskGb: 10 };
      assert.equal(await placeVm(db, need, 'libvirt', libvirtVm('vm-place-1')), 'kvm-b');
      assert.equal(await hostOf(db, 'vm-place-1'), 'kvm-b', 'the VM recorded on the host chosen');
      await db.updateTable('hypervisor_hosts').set({ state: 'draining' }).where('id', '=', 'kvm-b').execute();
      await assert.rejects(placeVm(db, need, 'libvirt', libvirtVm('vm-place-2')), /No host has room/);
      await assert.rejects(placeVm(db, need, 'libvirt', libvirtVm('vm-place-3')), /No host has room/);
      assert.equal(await hostOf(db, 'vm-place-2'), undefined, 'no VM is recorded on a draining host');
      assert.equal(await hostOf(db, 'vm-place-3'), undefined);
    });

    test('placement: a host filled by another placement meanwhile is passed over, the VM recorded on the next', async () => {
      const db = t.ctx.store.db;
      await libvirtHosts(db, [
        { id: 'race-a', cpu: 8, ramGb: 32, diskGb: 200 },
        { id: 'race-b', cpu: 8, ramGb: 16, diskGb: 200 },
      ]);
      const used = async (id: string) =>
        (
          await db
            .selectFrom('hypervisor_hosts')
            .select('used_cpu')
            .where('id', '=', id)
            .executeTakeFirstOrThrow()
        ).used_cpu;
      const before = await used('race-b');
      // Another placement takes all of race-a's vCPUs between the choice and the reservation:
      // a trigger on the VM's row recorded on race-a, which placement writes before reserving.
      if (store === 'postgres') {
        await sql`create function fill_race_a() returns trigger language plpgsql as $$
          begin update hypervisor_hosts set used_cpu = cpu where id = 'race-a'; return null; end $$`.execute(
          db,
        );
        await sql`create trigger fill_race_a after insert on libvirt_vms for each row
          when (new.host_id = 'race-a') execute function fill_race_a()`.execute(db);
      } else {
        await sql`create trigger fill_race_a after insert on libvirt_vms when new.host_id = 'race-a'
          begin update hypervisor_hosts set used_cpu = cpu where id = 'race-a'; end`.execute(db);
      }
      try {
        const host = await db
          .transaction()
          .execute((tx) => placeVm(tx, { cpu: 1, ramGb: 1, diskGb: 10 }, 'libvirt', libvirtVm('vm-race')));
        assert.equal(host, 'race-b');
        assert.equal(await hostOf(db, 'vm-race'), 'race-b', 'the VM moved to the host that had room');
        assert.equal(await used('race-a'), 8, 'race-a is not overbooked');
        assert.equal(await used('race-b'), before + 1);
      } finally {
        await sql`drop trigger fill_race_a${sql.raw(store === 'postgres' ? ' on libvirt_vms' : '')}`.execute(
          db,
        );
      }
    });

    test('backup storage in use is summed to the hundredth: three 2.8 GB backups, one deleted, show 5.6', async () => {
      const db = t.ctx.store.db;
      const host = 'sim-host-2';
      const backupOf = async () =>
        (await opsCall(t, ops, 'GET', 'hosts')).body.data.items.find((h: any) => h.host_id === host);
      // Plain addition gives 2.8 + 2.8 + 2.8 - 2.8 = 5.599999999999999.
      for (let i = 0; i < 3; i++) assert.equal(await reserveBackupSpace(db, host, 2.8), true);
      await freeBackupSpace(db, host, 2.8);
      const h = await backupOf();
      assert.equal(h.used.backup_gb, 5.6);
      assert.equal(h.free.backup_gb, h.capacity.backup_gb - 5.6);
      const stored = await db
        .selectFrom('hypervisor_hosts')
        .select('used_backup_gb')
        .where('id', '=', host)
        .executeTakeFirstOrThrow();
      assert.equal(Number(stored.used_backup_gb), 5.6);
      // 1.2 + 4.4 = 5.6000000000000005 in plain addition; freeing it all leaves exactly nothing.
      await freeBackupSpace(db, host, 5.6);
      assert.equal(await reserveBackupSpace(db, host, 1.2), true);
      assert.equal(await reserveBackupSpace(db, host, 4.4), true);
      assert.equal((await backupOf()).used.backup_gb, 5.6);
      await freeBackupSpace(db, host, 1.2);
      await freeBackupSpace(db, host, 4.4);
      assert.equal((await backupOf()).used.backup_gb, 0);
    });

    test('unknown hosts are 404 host_not_found; changes are audited; resellers get 403', async () => {
      for (const path of ['hosts/nope/drain', 'hosts/kvm-a/activate']) {
        const res = await opsCall(t, ops, 'POST', path);
        assert.equal(res.status, 404, path);
        assert.equal(res.body.error_code, 'host_not_found');
      }
      await opsCall(t, ops, 'POST', 'hosts/sim-host-2/drain');
      await opsCall(t, ops, 'POST', 'hosts/sim-host-2/activate');
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 1000, order: 'oldest' });
      const hostEntries = entries.filter((e) => e.target?.type === 'host' && e.target.id === 'sim-host-2');
      assert.deepEqual(
        hostEntries.slice(-2).map((e) => [e.actor.type, e.action, e.outcome]),
        [
          ['operator', 'host.drain', 'ok'],
          ['operator', 'host.activate', 'ok'],
        ],
      );
      assert.deepEqual(
        entries.filter((e) => e.action === 'host.drain' && e.outcome !== 'ok').map((e) => e.outcome),
        ['host_not_found'],
      );
      for (const [method, path] of [
        ['GET', 'hosts'],
        ['POST', 'hosts/sim-host-1/drain'],
      ] as const) {
        const res = await opsCall(t, acme, method, path);
        assert.equal(res.status, 403);
      }
      assert.equal((await opsCall(t, ops, 'GET', 'hosts')).body.data.items[0].state, 'active');
    });
  });
}

/** Libvirt hosts as the operator adds them (rows of their own, beside the simulated ones). */
async function libvirtHosts(
  db: Kysely<Database>,
  hosts: readonly { id: string; cpu: number; ramGb: number; diskGb: number }[],
): Promise<void> {
  for (const h of hosts)
    await db
      .insertInto('hypervisor_hosts')
      .values({
        id: h.id,
        name: h.id,
        driver: 'libvirt',
        uri: 'qemu:///system',
        cpu: h.cpu,
        ram_gb: h.ramGb,
        disk_gb: h.diskGb,
        backup_gb: 0,
        used_cpu: 0,
        used_ram_gb: 0,
        used_disk_gb: 0,
        used_backup_gb: 0,
        state: 'active',
        health: 'up',
        created_at: 0,
      })
      .execute();
}
