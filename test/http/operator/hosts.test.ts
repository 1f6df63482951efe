import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { DriverError } from '../../../src/drivers/driver.ts';
import {
  freeBackupSpace,
  placeVm,
  reserveBackupSpace,
  reserveDestination,
} from '../../../src/drivers/hosts.ts';
import { OPS } from '../../../src/http/base-path.ts';
import { probeHostUri } from '../../../src/jobs/host-operations.ts';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import type { Database } from '../../../src/store/schema.ts';
import { inGroupTransaction } from '../../../src/store/transaction-group.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { until } from '../../helpers/job-worker.ts';
import { operatorToken, opsCall } from '../../helpers/operator.ts';
import { blockedBy, lockWaiters } from '../../helpers/pg-lock-waits.ts';
import { statementCounter } from '../../helpers/statement-counter.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };

/** A libvirt driver's row of a VM, as placement records it. */
const libvirtVm = (id: string) => ({
  table: 'libvirt_vms' as const,
  row: { id, hostname: `${id}.example.com`, cpu: 1, ram_gb: 1, disk_gb: 10, created_at: Date.now() },
});
const hostOf = async (db: Kysely<Database>, vmId: string) =>
  (await db.selectFrom('libvirt_vms').select('host_id').where('id', '=', vmId).executeTakeFirst())?.host_id;

/** A simulated host's record as the operator sends it. */
const simHost = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  driver: 'simulated',
  cpu: 8,
  ram_gb: 16,
  disk_gb: 200,
  ...extra,
});

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

    const setState = (ids: readonly string[], state: 'active' | 'draining') =>
      t.ctx.store.db
        .updateTable('hypervisor_hosts')
        .set({ state })
        .where('id', 'in', [...ids])
        .execute();

    test('placements of one turn in one transaction: each placed where it fits, none overbooked; on PostgreSQL one reservation of their sum', async () => {
      const db = t.ctx.store.db;
      const need = (ramGb: number) => ({ cpu: 1, ramGb, diskGb: 10 });
      /** Places the VMs in one transaction, in one turn; their hosts, and what each host has in use. */
      async function placeAll(pair: readonly [string, string], ids: readonly string[], ramGb: number) {
        const counter = statementCounter();
        const hosts = await db.transaction().execute((tx) => {
          const on = tx.withPlugin(counter);
          return Promise.all(ids.map((id) => placeVm(on, need(ramGb), 'libvirt', libvirtVm(id))));
        });
        const rows = await db
          .selectFrom('hypervisor_hosts')
          .selectAll()
          .where('id', 'in', [...pair])
          .orderBy('id')
          .execute();
        for (const h of rows) {
          const mine = hosts.filter((x) => x === h.id).length;
          assert.deepEqual(
            [h.used_cpu, h.used_ram_gb, h.used_disk_gb],
            [mine, mine * ramGb, mine * 10],
            `${h.id} holds exactly the VMs placed on it`,
          );
          assert.ok(h.used_ram_gb <= h.ram_gb, `${h.id} is not overbooked`);
        }
        for (const [i, id] of ids.entries())
          assert.equal(await hostOf(db, id), hosts[i], 'each VM recorded where it was reserved');
        await setState(pair, 'draining');
        return { hosts, statements: counter.count };
      }
      // RAM beyond every other test's hosts, so each pair is the only one with room (drained after).
      await libvirtHosts(db, [
        { id: 'sum-a', cpu: 64, ramGb: 1000, diskGb: 2000 },
        { id: 'sum-b', cpu: 64, ramGb: 700, diskGb: 2000 },
        { id: 'sum-c', cpu: 64, ramGb: 1000, diskGb: 2000 },
        { id: 'sum-d', cpu: 64, ramGb: 700, diskGb: 2000 },
      ]);
      await setState(['sum-c', 'sum-d'], 'draining');
      // Four of 200 GB: their sum fits on sum-a, which has the most free RAM.
      const fit = await placeAll(['sum-a', 'sum-b'], ['vm-sum-1', 'vm-sum-2', 'vm-sum-3', 'vm-sum-4'], 200);
      await setState(['sum-c', 'sum-d'], 'active');
      // Four of 300 GB: their sum does not fit on sum-c; each alone: three there, one on sum-d.
      const split = await placeAll(['sum-c', 'sum-d'], ['vm-sum-5', 'vm-sum-6', 'vm-sum-7', 'vm-sum-8'], 300);
      assert.equal(split.hosts.length, 4, 'every VM placed');
      if (store === 'postgres') {
        // All four read the hosts in one statement and chose the same host; on SQLite each read
        // comes after the reservations before it, so the host with the most free RAM varies.
        assert.deepEqual(fit.hosts, ['sum-a', 'sum-a', 'sum-a', 'sum-a']);
        assert.equal(fit.statements, 2, 'the hosts read, and one reservation of the sum with the four rows');
        assert.deepEqual([...split.hosts].sort(), ['sum-c', 'sum-c', 'sum-c', 'sum-d']);
      }
    });

    test('placements of one turn, one of which cannot be written: outside a transaction only it fails; inside one, the transaction fails whole', async () => {
      const db = t.ctx.store.db;
      await libvirtHosts(db, [{ id: 'dup-a', cpu: 64, ramGb: 5000, diskGb: 2000 }]);
      const used = async () =>
        (
          await db
            .selectFrom('hypervisor_hosts')
            .select('used_ram_gb')
            .where('id', '=', 'dup-a')
            .executeTakeFirstOrThrow()
        ).used_ram_gb;
      const need = { cpu: 1, ramGb: 1000, diskGb: 10 };
      // vm-dup-1 is recorded already: a second row of it breaks the table's key.
      assert.equal(await placeVm(db, need, 'libvirt', libvirtVm('vm-dup-1')), 'dup-a');
      assert.equal(await used(), 1000);
      // Outside a transaction (on PostgreSQL their sum's statement fails, then each is made alone).
      const results = await Promise.allSettled([
        placeVm(db, need, 'libvirt', libvirtVm('vm-dup-2')),
        placeVm(db, need, 'libvirt', libvirtVm('vm-dup-1')),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected'],
      );
      assert.equal(await hostOf(db, 'vm-dup-2'), 'dup-a');
      assert.equal(await used(), 2000, 'only the VM placed holds room');
      // In one transaction: the failure is the transaction's, nothing of it stays.
      await assert.rejects(
        db
          .transaction()
          .execute((tx) =>
            Promise.all([
              placeVm(tx, need, 'libvirt', libvirtVm('vm-dup-3')),
              placeVm(tx, need, 'libvirt', libvirtVm('vm-dup-1')),
            ]),
          ),
      );
      assert.equal(await hostOf(db, 'vm-dup-3'), undefined);
      assert.equal(await used(), 2000, 'nothing reserved by the failed transaction');
      await setState(['dup-a'], 'draining');
    });

    test('placements of one turn in a shared transaction, one of which must go to a second host: placed, none overbooked; on PostgreSQL a second host another transaction holds is not waited for', async () => {
      const db = t.ctx.store.db;
      // RAM beyond every other test's hosts: this pair is the only one with room.
      await libvirtHosts(db, [
        { id: 'two-x', cpu: 64, ramGb: 100_000, diskGb: 2000 },
        { id: 'two-y', cpu: 64, ramGb: 70_000, diskGb: 2000 },
      ]);
      const need = { cpu: 1, ramGb: 30_000, diskGb: 10 };
      const ids = ['vm-two-1', 'vm-two-2', 'vm-two-3', 'vm-two-4'];
      // Begun in one turn: one transaction for the four on PostgreSQL (transaction-group.ts), as
      // the creates of a turn are. Their sum does not fit on two-x; three do, one must go to two-y.
      const place = (vmIds: readonly string[]) =>
        Promise.allSettled(
          vmIds.map((id) => inGroupTransaction(db, (tx) => placeVm(tx, need, 'libvirt', libvirtVm(id)))),
        );
      const usedRam = async () =>
        (
          await db
            .selectFrom('hypervisor_hosts')
            .select(['id', 'used_ram_gb'])
            .where('id', 'in', ['two-x', 'two-y'])
            .orderBy('id')
            .execute()
        ).map((h) => [h.id, h.used_ram_gb]);
      if (store === 'postgres') {
        // Another transaction holds two-y's row, as a placement of another process does while it
        // waits for two-x's: one that waited for two-y holding two-x would deadlock with it.
        const url = t.ctx.config.databaseUrl;
        const [holder, watcher, asker] = [new pg.Client(url), new pg.Client(url), new pg.Client(url)];
        await Promise.all([holder.connect(), watcher.connect(), asker.connect()]);
        const pidOf = async (c: pg.Client): Promise<number> =>
          (await c.query('select pg_backend_pid() as pid')).rows[0].pid;
        /** The backends `pid` waits for (pg_blocking_pids). */
        const blockersOf = async (pid: number): Promise<number[]> =>
          (await watcher.query('select pg_blocking_pids($1) as pids', [pid])).rows[0].pids;
        /** The backends that wait for `pid`. */
        const waitingFor = async (pid: number): Promise<number[]> =>
          (
            await watcher.query('select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [
              pid,
            ])
          ).rows.map((r) => r.pid);
        try {
          await holder.query('begin');
          await holder.query(`select id from hypervisor_hosts where id = 'two-y' for update`);
          const holderPid = await pidOf(holder);
          let results: Awaited<ReturnType<typeof place>> | undefined;
          const work = place(ids).then((r) => {
            results = r;
          });
          let waiters: number[] = [];
          await until(async () => {
            if (results) return true;
            waiters = await waitingFor(holderPid);
            return waiters.length > 0;
          }, "the placements to end, or one to wait for two-y's row");
          if (results) {
            // None waited: two-x's row is free while two-y's is held.
            await watcher.query('begin');
            await watcher.query(`select id from hypervisor_hosts where id = 'two-x' for update nowait`);
            await watcher.query('rollback');
            await holder.query('rollback');
          } else {
            // One waits for two-y (a placement whose read of the hosts came after the others had
            // filled two-x, holding nothing else, may). Does it hold two-x's row? Another
            // connection asks for that row and, while it waits, is told whom it waits for.
            const askerPid = await pidOf(asker);
            await asker.query('begin');
            let taken = false;
            const ask = asker
              .query(`select id from hypervisor_hosts where id = 'two-x' for update`)
              .then(() => {
                taken = true;
              });
            let heldByWaiter = false;
            await until(async () => {
              if (taken) return true;
              heldByWaiter = (await blockersOf(askerPid)).some((pid) => waiters.includes(pid));
              return heldByWaiter;
            }, "two-x's row taken, or seen held by the placement that waits for two-y's");
            await holder.query('rollback');
            await ask;
            await asker.query('rollback');
            await work;
            assert.ok(!heldByWaiter, "a placement waited for two-y's row holding two-x's");
          }
          // Refused, if any: one whose second host was busy, told to try again; nothing of it
          // written. Tried again once two-y is free, it is placed.
          for (const [i, r] of results!.entries()) {
            if (r.status === 'fulfilled') continue;
            const err = r.reason;
            assert.ok(err instanceof DriverError, String(err));
            assert.equal(err.transient, true, 'tried again by its job');
            assert.equal(
              err.message,
              'No host could take the server now: a host with room was busy with other placements',
            );
            assert.equal(await hostOf(db, ids[i]!), undefined, 'nothing of it written');
            assert.equal((await place([ids[i]!]))[0]?.status, 'fulfilled');
          }
        } finally {
          await Promise.all([holder.end(), watcher.end(), asker.end()]);
        }
      } else {
        const results = await place(ids);
        assert.deepEqual(results.map((r) => r.status === 'fulfilled' && r.value).sort(), [
          'two-x',
          'two-x',
          'two-x',
          'two-y',
        ]);
      }
      // Each placed and recorded where it was reserved; a host's use is its VMs', none overbooked
      // (three and one, or two and two when the placements made alone read the hosts after others
      // had filled two-x: the most free RAM is then two-y's).
      const on: Record<string, number> = { 'two-x': 0, 'two-y': 0 };
      for (const id of ids) {
        const host = await hostOf(db, id);
        assert.ok(host === 'two-x' || host === 'two-y', `${id} recorded on ${host}`);
        on[host]!++;
      }
      assert.deepEqual(await usedRam(), [
        ['two-x', on['two-x']! * 30_000],
        ['two-y', on['two-y']! * 30_000],
      ]);
      assert.ok(on['two-x']! <= 3 && on['two-y']! <= 2, JSON.stringify(on));
      await setState(['two-x', 'two-y'], 'draining');
    });

    test('a migration destination on PostgreSQL: the first host filled meanwhile, the next one busy: a transient failure, nothing reserved, no row waited for', {
      skip: store === 'postgres' ? false : 'PostgreSQL only (row locks)',
    }, async () => {
      const db = t.ctx.store.db;
      await libvirtHosts(db, [
        { id: 'dest-a', cpu: 64, ramGb: 200_000, diskGb: 2000 },
        { id: 'dest-b', cpu: 64, ramGb: 150_000, diskGb: 2000 },
      ]);
      const url = t.ctx.config.databaseUrl;
      const [filler, holder, watcher] = [new pg.Client(url), new pg.Client(url), new pg.Client(url)];
      await Promise.all([filler.connect(), holder.connect(), watcher.connect()]);
      try {
        // Another placement fills dest-a (not committed yet); another holds dest-b's row.
        await filler.query('begin');
        await filler.query(`update hypervisor_hosts set used_ram_gb = ram_gb where id = 'dest-a'`);
        await holder.query('begin');
        await holder.query(`select id from hypervisor_hosts where id = 'dest-b' for update`);
        const holderPid = Number(
          (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid,
        );
        const need = { cpu: 1, ramGb: 100_000, diskGb: 10 };
        let outcome: unknown;
        const move = db
          .transaction()
          .execute((tx) => reserveDestination(tx, need, 'libvirt', 'two-x', null))
          .then(
            (host) => {
              outcome = host;
            },
            (err) => {
              outcome = err;
            },
          );
        // It chose dest-a (most free RAM in what it read) and waits for the filler's row.
        await until(async () => (await lockWaiters(watcher)) > 0, 'the reservation to wait for dest-a');
        await filler.query('commit');
        // Then it ends, or waits for dest-b's row (holding dest-a's: the cycle this prevents). The
        // wait asked about is for the holder's lock: the one for dest-a may still show a moment
        // after the filler's commit.
        await until(
          async () => outcome !== undefined || (await blockedBy(watcher, holderPid)) > 0,
          "the move to end, or to wait for dest-b's row",
        );
        if (outcome === undefined) {
          await holder.query('rollback');
          await move;
          assert.fail("the move waited for dest-b's row");
        }
        assert.ok(outcome instanceof DriverError, String(outcome));
        assert.equal(outcome.transient, true);
        assert.equal(
          outcome.message,
          'No host could take the server now: a host with room was busy with other placements',
        );
        assert.equal(await lockWaiters(watcher), 0, 'nothing waits for dest-b');
        const used = await db
          .selectFrom('hypervisor_hosts')
          .select(['id', 'used_ram_gb'])
          .where('id', 'in', ['dest-a', 'dest-b'])
          .orderBy('id')
          .execute();
        assert.deepEqual(
          used.map((h) => [h.id, h.used_ram_gb]),
          [
            ['dest-a', 200_000],
            ['dest-b', 0],
          ],
          'nothing reserved by the failed move',
        );
        await holder.query('rollback');
        // Once dest-b is free, the same move goes there.
        assert.equal(
          await db.transaction().execute((tx) => reserveDestination(tx, need, 'libvirt', 'two-x', null)),
          'dest-b',
        );
      } finally {
        await Promise.all([filler.end(), holder.end(), watcher.end()]);
        await setState(['dest-a', 'dest-b'], 'draining');
      }
    });

    // What another placement, an operator or host health may change on the host chosen between
    // the choice and the reservation: each makes the reservation pass it over.
    const meanwhile = [
      // `used`: what the first host has in use after the change (vCPUs, RAM, disk), nothing of the VM's.
      { what: 'filled (vCPUs)', set: 'used_cpu = cpu', used: [8, 0, 0] },
      { what: 'filled (RAM)', set: 'used_ram_gb = ram_gb', used: [0, 32, 0] },
      { what: 'filled (disk)', set: 'used_disk_gb = disk_gb', used: [0, 0, 200] },
      { what: 'drained', set: "state = 'draining'", used: [0, 0, 0] },
      { what: 'found unreachable', set: "health = 'down'", used: [0, 0, 0] },
    ];
    for (const [i, m] of meanwhile.entries()) {
      test(`placement: a host ${m.what} meanwhile is passed over, the VM recorded on the next`, async () => {
        const db = t.ctx.store.db;
        const [a, b, vm] = [`race-a${i}`, `race-b${i}`, `vm-race${i}`];
        await libvirtHosts(db, [
          { id: a, cpu: 8, ramGb: 32, diskGb: 200 },
          { id: b, cpu: 8, ramGb: 16, diskGb: 200 },
        ]);
        const row = (id: string) =>
          db.selectFrom('hypervisor_hosts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        const before = await row(b);
        // The change comes between the choice and the reservation: in what the VM takes from the
        // host tried, which placement asks for just before reserving.
        const change = sql.raw(`update hypervisor_hosts set ${m.set} where id = '${a}'`);
        const host = await db.transaction().execute((tx) =>
          placeVm(tx, { cpu: 1, ramGb: 1, diskGb: 10 }, 'libvirt', libvirtVm(vm), async (tried) => {
            if (tried === a) await change.execute(tx);
            return {};
          }),
        );
        assert.equal(host, b);
        assert.equal(await hostOf(db, vm), b, 'the VM recorded on the host that could take it');
        const after = await row(a);
        assert.deepEqual(
          [after.used_cpu, after.used_ram_gb, after.used_disk_gb],
          m.used,
          'nothing reserved on the host passed over (so none overbooked)',
        );
        assert.equal((await row(b)).used_cpu, before.used_cpu + 1);
      });
    }

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

    test('a host added at run time: 200 with the record, listed by name, shown alone, audited host.create', async () => {
      const res = await opsCall(t, ops, 'POST', 'hosts', simHost('added-1', { backup_gb: 50 }));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const h = res.body.data;
      assert.match(h.host_id, /^[0-9a-f-]{36}$/);
      assert.deepEqual(
        [h.name, h.driver, h.uri, h.state, h.health, h.failing_since, h.services, h.evacuation],
        ['added-1', 'simulated', null, 'active', 'up', null, 0, null],
      );
      assert.deepEqual(h.capacity, { cpu: 8, ram_gb: 16, disk_gb: 200, backup_gb: 50 });
      assert.deepEqual(h.free, h.capacity);
      assert.ok(!Number.isNaN(Date.parse(h.created_at)));
      const one = await opsCall(t, ops, 'GET', `hosts/${h.host_id}`);
      assert.deepEqual(one.body.data, h);
      const names = (await opsCall(t, ops, 'GET', 'hosts')).body.data.items.map((x: any) => x.name);
      assert.deepEqual(names, [...names].sort());
      assert.ok(names.includes('added-1'));
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 1000, order: 'oldest' });
      assert.ok(
        entries.some((e) => e.action === 'host.create' && e.target?.id === h.host_id && e.outcome === 'ok'),
      );
      assert.equal((await opsCall(t, ops, 'GET', 'hosts/no-such-host')).body.error_code, 'host_not_found');
    });

    test('a new host is refused with its own code: bad name, name taken, another driver, a uri on a simulated host, capacities', async () => {
      await opsCall(t, ops, 'POST', 'hosts', simHost('taken-1'));
      const cases: [unknown, string, RegExp?][] = [
        [simHost('bad name'), 'invalid_host_name'],
        [simHost(''), 'invalid_host_name'],
        [simHost('x'.repeat(64)), 'invalid_host_name'],
        [simHost('taken-1'), 'host_name_taken', /taken-1/],
        [
          simHost('kvm-9', { driver: 'libvirt', uri: 'qemu:///system' }),
          'host_driver_mismatch',
          /simulated driver/,
        ],
        [simHost('sim-uri', { uri: 'qemu:///system' }), 'invalid_host_uri'],
        [simHost('zero', { cpu: 0 }), 'validation_failed'],
        [simHost('frac', { ram_gb: 1.5 }), 'validation_failed'],
        [simHost('neg', { disk_gb: -1 }), 'validation_failed'],
        [{ name: 'partial', driver: 'simulated' }, 'validation_failed'],
      ];
      for (const [body, code, message] of cases) {
        const res = await opsCall(t, ops, 'POST', 'hosts', body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error_code, code, JSON.stringify(res.body));
        if (message) assert.match(res.body.message, message);
      }
    });

    test('PATCH changes name and capacity; below use is capacity_below_use naming the amount; other refusals', async () => {
      const added = (await opsCall(t, ops, 'POST', 'hosts', simHost('patch-1'))).body.data;
      await opsCall(t, ops, 'POST', 'hosts', simHost('patch-2'));
      const id = added.host_id;
      await t.ctx.store.db
        .updateTable('hypervisor_hosts')
        .set({ used_cpu: 4, used_ram_gb: 6 })
        .where('id', '=', id)
        .execute();
      // No body at all changes nothing (it was a 500).
      const bare = await t.app.inject({
        method: 'PATCH',
        url: `${OPS}/hosts/${id}`,
        headers: { authorization: `Bearer ${ops}` },
      });
      assert.equal(bare.statusCode, 200, bare.body);
      assert.equal(bare.json().data.name, 'patch-1');
      const ok = await patch(t, ops, `hosts/${id}`, { name: 'patch-1b', cpu: 4, disk_gb: 300 });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.deepEqual(
        [
          ok.body.data.name,
          ok.body.data.capacity.cpu,
          ok.body.data.capacity.ram_gb,
          ok.body.data.capacity.disk_gb,
        ],
        ['patch-1b', 4, 16, 300],
      );
      const below = await patch(t, ops, `hosts/${id}`, { ram_gb: 5 });
      assert.equal(below.status, 400);
      assert.equal(below.body.error_code, 'capacity_below_use');
      assert.match(below.body.message, /ram_gb 5 .* 6 GB in use/);
      for (const [body, code] of [
        [{ cpu: 3 }, 'capacity_below_use'],
        [{ name: 'patch-2' }, 'host_name_taken'],
        [{ name: 'no/slash' }, 'invalid_host_name'],
        [{ uri: 'qemu:///system' }, 'invalid_host_uri'],
        [{ cpu: 0 }, 'validation_failed'],
        [{ cpus: 9 }, 'validation_failed'],
      ] as const) {
        const res = await patch(t, ops, `hosts/${id}`, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error_code, code, JSON.stringify(res.body));
      }
      assert.equal((await opsCall(t, ops, 'GET', `hosts/${id}`)).body.data.capacity.ram_gb, 16, 'unchanged');
      const missing = await patch(t, ops, 'hosts/nope', { cpu: 9 });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error_code, 'host_not_found');
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 1000, order: 'oldest' });
      assert.deepEqual(
        entries.filter((e) => e.action === 'host.update' && e.target?.id === id).map((e) => e.outcome),
        ['ok', 'ok'],
        'the empty change and the change',
      );
    });

    test('delete: a host with a server is 409 host_not_empty; an empty one goes, with its rows; audited', async () => {
      const db = t.ctx.store.db;
      const id = (await opsCall(t, ops, 'POST', 'hosts', simHost('del-1'))).body.data.host_id;
      await db
        .insertInto('libvirt_vms')
        .values({ ...libvirtVm('vm-del-1').row, host_id: id })
        .execute();
      const full = await opsCall(t, ops, 'POST', `hosts/${id}/delete`);
      assert.equal(full.status, 409);
      assert.equal(full.body.error_code, 'host_not_empty');
      assert.match(full.body.message, /1 server is on this host/);
      await db.deleteFrom('libvirt_vms').where('id', '=', 'vm-del-1').execute();
      await db
        .insertInto('host_images')
        .values({ host_id: id, template_id: 't', volume: 'v', sha256: 's', size_bytes: 1, created_at: 0 })
        .execute();
      await db.insertInto('sim_host_outages').values({ host_id: id, since: 0 }).execute();
      await db.insertInto('sim_storage_full').values({ host_id: id, since: 0 }).execute();
      const gone = await opsCall(t, ops, 'POST', `hosts/${id}/delete`);
      assert.equal(gone.status, 200, JSON.stringify(gone.body));
      assert.deepEqual(gone.body.data, []);
      assert.equal((await opsCall(t, ops, 'GET', `hosts/${id}`)).status, 404);
      for (const table of ['host_images', 'sim_host_outages', 'sim_storage_full'] as const)
        assert.equal(
          (await db.selectFrom(table).select('host_id').where('host_id', '=', id).execute()).length,
          0,
        );
      const entries = await listAuditEntries(db, { limit: 1000, order: 'oldest' });
      assert.deepEqual(
        entries.filter((e) => e.action === 'host.delete' && e.target?.id === id).map((e) => e.outcome),
        ['ok'],
      );
      assert.ok(entries.some((e) => e.action === 'host.delete' && e.outcome === 'host_not_empty'));
    });

    test('migrate: queues a migrate job from the current host; each refusal has its code', async () => {
      const db = t.ctx.store.db;
      const id = await provision('migrate.example.com');
      await waitForStatus(t, acme, id, 'running');
      const from = (await opsCall(t, ops, 'GET', `services/${id}`)).body.data.host.host_id;
      const mk = async (name: string) =>
        (await opsCall(t, ops, 'POST', 'hosts', simHost(name))).body.data.host_id;
      const draining = await mk('mig-draining');
      await opsCall(t, ops, 'POST', `hosts/${draining}/drain`);
      const evacuating = await mk('mig-evacuating');
      await opsCall(t, ops, 'POST', `hosts/${evacuating}/evacuate`);
      const down = await mk('mig-down');
      await db
        .updateTable('hypervisor_hosts')
        .set({ health: 'unreachable' })
        .where('id', '=', down)
        .execute();
      for (const [body, status, code] of [
        [{ host_id: 'nope' }, 404, 'host_not_found'],
        [{ host_id: from }, 400, 'same_host'],
        [{ host_id: draining }, 400, 'host_not_active'],
        [{ host_id: evacuating }, 400, 'host_not_active'],
        [{ host_id: down }, 400, 'host_unreachable'],
        [{ host_id: 7 }, 400, 'validation_failed'],
      ] as const) {
        const res = await opsCall(t, ops, 'POST', `services/${id}/migrate`, body);
        assert.equal(res.status, status, JSON.stringify(body));
        assert.equal(res.body.error_code, code, JSON.stringify(res.body));
      }
      const unknown = await opsCall(
        t,
        ops,
        'POST',
        'services/00000000-0000-4000-8000-000000000000/migrate',
        {},
      );
      assert.equal(unknown.body.error_code, 'service_not_found');
      const pending = (
        await call(t, acme, 'POST', 'service/create-order', smallOrder('pending-mig.example.com'), B)
      ).body.data[0].service_id;
      const invalid = await opsCall(t, ops, 'POST', `services/${pending}/migrate`, {});
      assert.equal(invalid.status, 400);
      assert.equal(invalid.body.error_code, 'invalid_state');

      const target = await mk('mig-target');
      const res = await opsCall(t, ops, 'POST', `services/${id}/migrate`, { host_id: target });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.job.action, 'migrate');
      assert.equal(res.headers['x-job-id'], res.body.data.job.job_id);
      const job = await db
        .selectFrom('jobs')
        .select('params')
        .where('id', '=', res.body.data.job.job_id)
        .executeTakeFirstOrThrow();
      const params = typeof job.params === 'string' ? JSON.parse(job.params) : job.params;
      assert.deepEqual(params, { host_id: target, from_host_id: from, evacuation: false });
      // Once that move has ended (asked while it ends, the request may find the server moved
      // meanwhile: 400 invalid_state, ask again), the placement rule's choice.
      await waitForStatus(t, acme, id, 'running');
      const any = await opsCall(t, ops, 'POST', `services/${id}/migrate`, {});
      assert.equal(any.status, 200, JSON.stringify(any.body));
      const entries = await listAuditEntries(db, { limit: 1000, order: 'oldest' });
      assert.ok(
        entries.some((e) => e.action === 'service.migrate' && e.serviceId === id && e.outcome === 'ok'),
      );
      // That move ends here, not during the next test (it would land on the host that test adds).
      await until(async () => {
        const open = await db
          .selectFrom('jobs')
          .select('id')
          .where('service_id', '=', id)
          .where('status', 'in', ['queued', 'running'])
          .execute();
        return open.length === 0;
      }, 'the second move to end');
    });

    test('placement and capacity work on a host added at run time: with the seeded hosts drained, a new order lands there', async () => {
      const added = (await opsCall(t, ops, 'POST', 'hosts', simHost('runtime-1', { cpu: 4, ram_gb: 8 }))).body
        .data;
      const others = (await opsCall(t, ops, 'GET', 'hosts?limit=1000')).body.data.items.filter(
        (h: any) => h.host_id !== added.host_id && h.state === 'active',
      );
      for (const h of others) await opsCall(t, ops, 'POST', `hosts/${h.host_id}/drain`);
      try {
        const id = await provision('runtime.example.com');
        await waitForStatus(t, acme, id, 'running');
        const details = (await opsCall(t, ops, 'GET', `services/${id}`)).body.data;
        assert.equal(details.host.host_id, added.host_id);
        const now = (await opsCall(t, ops, 'GET', `hosts/${added.host_id}`)).body.data;
        assert.deepEqual(
          [now.services, now.used.cpu, now.used.ram_gb, now.used.disk_gb, now.free.cpu],
          [1, 1, 1, 20, 3],
        );
        assert.ok(details.ip, 'the server got its address');
      } finally {
        for (const h of others) await opsCall(t, ops, 'POST', `hosts/${h.host_id}/activate`);
      }
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

/** A PATCH of the operator API (opsCall sends GET, POST and PUT). */
async function patch(t: TestApp, token: string, path: string, body: unknown) {
  const res = await t.app.inject({
    method: 'PATCH',
    url: `${OPS}/${path}`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.json() };
}

for (const store of testStores()) {
  describe(`operator API: hosts of the libvirt driver (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let dir: string;

    before(async () => {
      t = await createTestApp({ VRP_DRIVER: 'libvirt' }, { store });
      ops = await operatorToken(t);
      dir = await mkdtemp(join(tmpdir(), 'vrp-host-probe-'));
    });
    after(async () => {
      await t.close();
      await rm(dir, { recursive: true, force: true });
    });

    const kvm = (name: string, uri?: string) => ({
      name,
      driver: 'libvirt',
      uri,
      cpu: 16,
      ram_gb: 64,
      disk_gb: 500,
    });

    test('a libvirt host whose connection does not answer is added, unreachable since now', async () => {
      const uri = `qemu+unix:///system?socket=${dir}/libvirt-sock`;
      const before = Date.now();
      const res = await opsCall(t, ops, 'POST', 'hosts', kvm('kvm-nosock', uri));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        [res.body.data.uri, res.body.data.health, res.body.data.state],
        [uri, 'unreachable', 'active'],
      );
      assert.ok(Date.parse(res.body.data.failing_since) >= before - 1000);
      assert.equal(res.body.data.checked_at, res.body.data.failing_since);
      // It takes no server: a migration there is refused.
      const listed = (await opsCall(t, ops, 'GET', 'hosts')).body.data.items;
      assert.deepEqual(
        listed.map((h: any) => h.name),
        ['kvm-nosock'],
      );
    });

    test('probeHostUri says why a connection failed', async () => {
      const result = await probeHostUri(`qemu+unix:///system?socket=${dir}/other-sock`, 5000);
      assert.equal(result.ok, false);
      assert.ok(!result.ok && result.reason.length > 0);
    });

    test('libvirt hosts: the uri is required and must be a libvirt URI; simulated hosts and backup storage are refused', async () => {
      const cases: [unknown, string][] = [
        [kvm('no-uri'), 'invalid_host_uri'],
        [kvm('http-uri', 'http://kvm1.example.com/system'), 'invalid_host_uri'],
        [kvm('bad-path', 'qemu+ssh://root@kvm1.example.com/root'), 'invalid_host_uri'],
        [kvm('xen', 'xen:///system'), 'invalid_host_uri'],
        [{ ...kvm('sim'), driver: 'simulated' }, 'host_driver_mismatch'],
        [{ ...kvm('backup', 'qemu:///system'), backup_gb: 10 }, 'validation_failed'],
      ];
      for (const [body, code] of cases) {
        const res = await opsCall(t, ops, 'POST', 'hosts', body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error_code, code, JSON.stringify(res.body));
      }
      const mismatch = await opsCall(t, ops, 'POST', 'hosts', { ...kvm('sim'), driver: 'simulated' });
      assert.match(mismatch.body.message, /runs the libvirt driver/);
      const id = (await opsCall(t, ops, 'GET', 'hosts')).body.data.items[0].host_id;
      const bad = await patch(t, ops, `hosts/${id}`, { uri: 'qemu+ssh://kvm1/nowhere' });
      assert.equal(bad.body.error_code, 'invalid_host_uri');
    });
  });

  describe(`operator API: an evacuation's counts (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let acme: string;

    before(async () => {
      // No worker: the jobs stay as the test sets them.
      t = await createTestApp({}, { store });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
    });
    after(() => t.close());

    test('evacuate: state evacuating with its start; again changes nothing; activate stops it; all audited (no evacuator runs here: it would end an empty host’s evacuation at once)', async () => {
      const id = (await opsCall(t, ops, 'POST', 'hosts', simHost('evac-1'))).body.data.host_id;
      const res = await opsCall(t, ops, 'POST', `hosts/${id}/evacuate`);
      assert.equal(res.status, 200);
      assert.equal(res.body.data.state, 'evacuating');
      assert.deepEqual(
        { ...res.body.data.evacuation, started_at: undefined },
        { started_at: undefined, done: 0, failed: 0, running: 0, left: 0 },
      );
      const again = await opsCall(t, ops, 'POST', `hosts/${id}/evacuate`);
      assert.equal(again.body.data.state, 'evacuating');
      assert.equal(again.body.data.evacuation.started_at, res.body.data.evacuation.started_at);
      const active = await opsCall(t, ops, 'POST', `hosts/${id}/activate`);
      assert.equal(active.body.data.state, 'active');
      const drained = await opsCall(t, ops, 'POST', `hosts/${id}/drain`);
      assert.equal(drained.body.data.state, 'draining');
      for (const verb of ['evacuate', 'delete']) {
        const missing = await opsCall(t, ops, 'POST', `hosts/nope/${verb}`);
        assert.equal(missing.status, 404);
        assert.equal(missing.body.error_code, 'host_not_found');
      }
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 1000, order: 'oldest' });
      assert.deepEqual(
        entries.filter((e) => e.target?.id === id).map((e) => e.action),
        ['host.create', 'host.evacuate', 'host.evacuate', 'host.activate', 'host.drain'],
      );
    });

    test('done, failed from the moves’ jobs since the start; running: every move under way; left: servers on it with no move under way', async () => {
      const db = t.ctx.store.db;
      const host = (
        await opsCall(t, ops, 'POST', 'hosts', {
          name: 'evac-c',
          driver: 'simulated',
          cpu: 8,
          ram_gb: 16,
          disk_gb: 200,
        })
      ).body.data.host_id;
      const services: string[] = [];
      const jobs: string[] = [];
      for (let i = 0; i < 5; i++) {
        const id = (
          await call(t, acme, 'POST', 'service/create-order', smallOrder(`evac${i}.example.com`), B)
        ).body.data[0].service_id;
        const queued = await call(t, acme, 'POST', `service/${id}/create`, undefined, B);
        services.push(id);
        jobs.push(String(queued.headers['x-job-id']));
      }
      const started = (await opsCall(t, ops, 'POST', `hosts/${host}/evacuate`)).body.data;
      const startedAt = Date.parse(started.evacuation.started_at);
      // Servers 0, 1, 2, 4 are on the host; 3 has moved off already.
      for (const i of [0, 1, 2, 4])
        await db
          .insertInto('libvirt_vms')
          .values({ ...libvirtVm(services[i]!).row, host_id: host })
          .execute();
      const move = (i: number, at: number) =>
        db
          .insertInto('host_evacuation_moves')
          .values({ host_id: host, service_id: services[i]!, job_id: jobs[i]!, queued_at: at })
          .execute();
      await move(0, startedAt); // queued: running
      await move(1, startedAt); // failed
      await move(3, startedAt); // succeeded
      // An earlier evacuation's: under way, it runs (the evacuator counts it against the
      // concurrency); failed, it is not counted, and its server is left.
      await move(4, startedAt - 1);
      await move(2, startedAt - 1);
      await db
        .updateTable('jobs')
        .set({ status: 'failed' })
        .where('id', 'in', [jobs[1]!, jobs[2]!])
        .execute();
      await db.updateTable('jobs').set({ status: 'succeeded' }).where('id', '=', jobs[3]!).execute();
      const h = (await opsCall(t, ops, 'GET', `hosts/${host}`)).body.data;
      assert.deepEqual(
        { ...h.evacuation, started_at: undefined },
        { started_at: undefined, done: 1, failed: 1, running: 2, left: 2 },
      );
      assert.equal(h.services, 4);
    });
  });
}
