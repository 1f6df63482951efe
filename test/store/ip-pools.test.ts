/**
 * Address pools in the store: the start after migration 021 turns the old setting into the pool
 * `default` owning the addresses services hold; concurrent allocations never hand out an address
 * or a prefix twice, on either store.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { createIpPool, type IpPool } from '../../src/drivers/ip-pool.ts';
import type { Store } from '../../src/store/database.ts';
import { isStoreUnavailable } from '../../src/store/errors.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { type AuditContext, systemAudit } from '../../src/store/repos/audit.ts';
import { newHostRow } from '../../src/store/repos/hosts.ts';
import { takeFreeAddress } from '../../src/store/repos/ip-addresses.ts';
import { createPool, rangeOf, updatePool } from '../../src/store/repos/ip-pools.ts';
import { networkOf } from '../../src/store/repos/service-network.ts';
import type { Database } from '../../src/store/schema.ts';
import { waitUntil } from '../helpers/budget.ts';
import { statementCounter } from '../helpers/statement-counter.ts';
import { type StoreKind, storeAtMigration, testStores } from '../helpers/stores.ts';

const num = (a: string) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);

/**
 * A store brought up to today's schema from 021 on (the pools' audits need today's columns),
 * with the simulated hosts `hosts`, and the allocator started with the pool default
 * (10.9.0.0/29, bound to no host).
 */
async function withPools(
  kind: StoreKind,
  hosts: readonly string[],
  body: (s: { store: Store; pool: IpPool; audit: AuditContext }) => Promise<void>,
): Promise<void> {
  const { store, done } = await storeAtMigration(kind, '021-ip-pools');
  try {
    await migrateToLatest(store.db as Kysely<unknown>);
    for (const h of hosts)
      await store.db
        .insertInto('hypervisor_hosts')
        .values(newHostRow(h, h, 'simulated', { cpu: 8, ramGb: 16, diskGb: 100 }, 0))
        .execute();
    const pool = await createIpPool(store.db, '10.9.0.0/29', Date.now);
    await body({ store, pool, audit: systemAudit('ip_pool.create') });
  } finally {
    await done();
  }
}

for (const kind of testStores()) {
  test(`a store from before pools were records: its addresses become the pool default's, held ones stay with their services (${kind})`, async () => {
    const { store, done } = await storeAtMigration(kind, '020-self-service');
    try {
      const db = store.db as Kysely<unknown>;
      // What the allocator of the old setting 10.9.0.0/29 wrote: .2 to .6, two of them held.
      for (const i of [2, 3, 4, 5, 6]) {
        const address = `10.9.0.${i}`;
        const vm = i === 2 ? 'vm-old-1' : i === 4 ? 'vm-old-2' : null;
        await sql`insert into ip_addresses (address_num, address, vm_id, allocated_at, released_at)
          values (${num(address)}, ${address}, ${vm}, ${vm ? 1000 + i : null}, 0)`.execute(db);
      }
      assert.equal((await migrateToLatest(db))[0], '021-ip-pools');
      const pool = await createIpPool(store.db, '10.9.0.0/29', () => 5000);
      const pools = await store.db.selectFrom('ip_pools').selectAll().execute();
      assert.equal(pools.length, 1);
      assert.equal(pools[0]?.name, 'default');
      assert.equal(pools[0]?.network, '10.9.0.0/29');
      const owners = await store.db.selectFrom('ip_addresses').select(['pool_id']).execute();
      assert.ok(
        owners.every((r) => r.pool_id === pools[0]?.id),
        'every row is the pool default’s',
      );
      assert.deepEqual(await networkOf(store.db, 'vm-old-1'), {
        ipv4: [{ address: '10.9.0.2', network: '10.9.0.0/29', gateway: '10.9.0.1' }],
        ipv6: null,
      });
      // A new service gets the free ones only, whichever host it is on (default serves every host).
      assert.deepEqual(await pool.allocate('vm-new', 'any-host', 3), ['10.9.0.3', '10.9.0.5', '10.9.0.6']);
      await assert.rejects(
        pool.allocate('vm-more', 'any-host', 1),
        /No free IPv4 address in pool 10.9.0.0\/29/,
      );
      // A later start, with another setting, changes nothing.
      await createIpPool(store.db, '10.10.0.0/24', () => 6000);
      assert.equal((await store.db.selectFrom('ip_pools').select('id').execute()).length, 1);
    } finally {
      await done();
    }
  });

  test(`the pools serving a host: its own, else those bound to no host; none is refused by name (${kind})`, () =>
    withPools(kind, ['h1', 'h2'], async ({ store, pool, audit }) => {
      await createPool(
        store.db,
        { name: 'h1-v4', family: 'ipv4', network: '192.0.2.0/29', hosts: ['h1'] },
        Date.now(),
        audit,
      );
      // h1 takes from its own pool only; h2, with none of its own, from the unbound default.
      assert.deepEqual(await pool.allocate('vm-1', 'h1', 1), ['192.0.2.2']);
      assert.deepEqual(await pool.allocate('vm-2', 'h2', 1), ['10.9.0.2']);
      // An IPv6 pool bound to h1 says nothing of h2's IPv4, and gives h2 no IPv6.
      await createPool(
        store.db,
        { name: 'h1-v6', family: 'ipv6', network: '2001:db8:7000::/60', hosts: ['h1'] },
        Date.now(),
        audit,
      );
      assert.deepEqual(await pool.allocate('vm-3', 'h2', 1), ['10.9.0.3']);
      assert.equal(await pool.allocateIpv6('vm-3', 'h2'), undefined);
      // The default bound to h1 too: no IPv4 pool serves h2 any more, and the refusal says so.
      const fallback = await store.db
        .selectFrom('ip_pools')
        .select('id')
        .where('name', '=', 'default')
        .executeTakeFirstOrThrow();
      await updatePool(store.db, fallback.id, { hosts: ['h1'] }, Date.now(), audit);
      await assert.rejects(pool.allocate('vm-4', 'h2', 1), /No IPv4 address pool serves host h2/);
      // h1 now has both, oldest first: the default's next free address.
      assert.deepEqual(await pool.allocate('vm-5', 'h1', 1), ['10.9.0.4']);
    }));

  test(`a create's allocation of both families at once: each family's pools by its own rule, idempotent, all or nothing (${kind})`, () =>
    withPools(kind, ['h1', 'h2'], async ({ store, pool, audit }) => {
      // IPv4: h1's own pool, and the unbound default (10.9.0.2 to .6). IPv6: an unbound pool, and
      // h2's own. So h1 has a pool of its own of one family only, h2 of the other.
      const pools = [
        { name: 'h1-v4', family: 'ipv4', network: '192.0.2.0/29', hosts: ['h1'] },
        { name: 'any-v6', family: 'ipv6', network: '2001:db8:7000::/60', hosts: [] },
        { name: 'h2-v6', family: 'ipv6', network: '2001:db8:8000::/60', hosts: ['h2'] },
      ] as const;
      for (const p of pools) await createPool(store.db, p, Date.now(), audit);
      const gateway = async (name: string) =>
        (
          await store.db
            .selectFrom('ip_pools')
            .select('gateway')
            .where('name', '=', name)
            .executeTakeFirstOrThrow()
        ).gateway;

      const a = await pool.allocateAll('vm-a', 'h1', 2);
      assert.deepEqual(a.ipv4, ['192.0.2.2', '192.0.2.3'], 'h1 takes IPv4 from its own pool');
      assert.match(
        a.ipv6?.prefix ?? '',
        /^2001:db8:7000:/,
        'and IPv6 from the unbound pool: none of its own',
      );
      assert.equal(a.ipv6?.gateway, await gateway('any-v6'));
      const b = await pool.allocateAll('vm-b', 'h2', 2);
      assert.deepEqual(b.ipv4, ['10.9.0.2', '10.9.0.3'], 'h2 takes IPv4 from the default: none of its own');
      assert.match(b.ipv6?.prefix ?? '', /^2001:db8:8000:/, 'and IPv6 from its own pool');
      assert.equal(b.ipv6?.gateway, await gateway('h2-v6'));

      // Asked again: what it holds; asked for more: topped up, the primary first still.
      assert.deepEqual(await pool.allocateAll('vm-b', 'h2', 2), b);
      const more = await pool.allocateAll('vm-b', 'h2', 3);
      assert.deepEqual(more, { ipv4: ['10.9.0.2', '10.9.0.3', '10.9.0.4'], ipv6: b.ipv6 });
      // The same as the two allocations one at a time say.
      assert.deepEqual(await pool.allocate('vm-b', 'h2', 3), more.ipv4);
      assert.deepEqual({ ...(await pool.allocateIpv6('vm-b', 'h2')) }, b.ipv6);

      // Three more addresses where two are left: refused, and nothing of either family is taken.
      await assert.rejects(pool.allocateAll('vm-c', 'h2', 3), /No free IPv4 address in pool 10.9.0.0\/29/);
      const heldBy = async (vm: string) => ({
        ipv4: (await store.db.selectFrom('ip_addresses').select('address').where('vm_id', '=', vm).execute())
          .length,
        ipv6: (await store.db.selectFrom('ipv6_prefixes').select('prefix').where('vm_id', '=', vm).execute())
          .length,
      });
      assert.deepEqual(await heldBy('vm-c'), { ipv4: 0, ipv6: 0 });
      assert.deepEqual(await heldBy('vm-b'), { ipv4: 3, ipv6: 1 });

      // h1's IPv6 from a pool of two prefixes of its own: the third VM is refused, and takes no
      // IPv4 address either.
      await createPool(
        store.db,
        { name: 'h1-v6', family: 'ipv6', network: '2001:db8:9000::/63', hosts: ['h1'] },
        Date.now(),
        audit,
      );
      for (const vm of ['vm-d', 'vm-e'])
        assert.match((await pool.allocateAll(vm, 'h1', 1)).ipv6?.prefix ?? '', /^2001:db8:9000:/);
      await assert.rejects(pool.allocateAll('vm-f', 'h1', 1), /No free IPv6 prefix in the pools of host h1/);
      assert.deepEqual(await heldBy('vm-f'), { ipv4: 0, ipv6: 0 });
    }));

  test(`takes of one turn in one transaction: each a different free address, in the order a take alone picks, none past the free ones (${kind})`, () =>
    withPools(kind, ['h1'], async ({ store, pool, audit }) => {
      // 192.0.2.0/29: .2 to .6 handed out; .2 taken and given back, so it comes last.
      await createPool(
        store.db,
        { name: 'v4', family: 'ipv4', network: '192.0.2.0/29', hosts: ['h1'] },
        Date.now(),
        audit,
      );
      assert.deepEqual(await pool.allocate('vm-first', 'h1', 1), ['192.0.2.2']);
      await pool.release('vm-first');
      const record = await store.db
        .selectFrom('ip_pools')
        .selectAll()
        .where('name', '=', 'v4')
        .executeTakeFirstOrThrow();
      const counter = statementCounter();
      const vms = Array.from({ length: 8 }, (_, i) => `vm-${i}`);
      const taken = await store.db.transaction().execute((tx) => {
        const db = tx.withPlugin(counter);
        return Promise.all(vms.map((vm) => takeFreeAddress(db, rangeOf(record), vm, 5000)));
      });
      assert.deepEqual(taken, [
        '192.0.2.3',
        '192.0.2.4',
        '192.0.2.5',
        '192.0.2.6',
        '192.0.2.2',
        undefined,
        undefined,
        undefined,
      ]);
      // What the store holds is what each take was told.
      const held = await store.db
        .selectFrom('ip_addresses')
        .select(['address', 'vm_id', 'allocated_at'])
        .where('pool_id', '=', record.id)
        .where('vm_id', 'is not', null)
        .orderBy('vm_id')
        .execute();
      assert.deepEqual(
        held.map((r) => `${r.vm_id} ${r.address} ${r.allocated_at}`),
        taken.slice(0, 5).map((a, i) => `vm-${i} ${a} 5000`),
      );
      // PostgreSQL: the eight takes were one statement (statement-batch.ts); SQLite one each.
      assert.equal(counter.count, kind === 'postgres' ? 1 : 8);
    }));

  test(`concurrent allocations from host pools: no IPv4 address and no IPv6 prefix twice, exhaustion refused (${kind})`, () =>
    withPools(kind, ['h1'], async ({ store, pool, audit }) => {
      // 192.0.2.0/28 from .2 to .14 without .2 and .3: 11 addresses; a /60 in /64s: 16 prefixes.
      await createPool(
        store.db,
        {
          name: 'v4',
          family: 'ipv4',
          network: '192.0.2.0/28',
          reserved: ['192.0.2.2', '192.0.2.3'],
          hosts: ['h1'],
        },
        Date.now(),
        audit,
      );
      await createPool(
        store.db,
        { name: 'v6', family: 'ipv6', network: '2001:db8:7000::/60', hosts: ['h1'] },
        Date.now(),
        audit,
      );
      const vms = Array.from({ length: 14 }, (_, i) => `vm-${i}`);
      const results = await Promise.allSettled(
        vms.map((vm) =>
          // As a create takes them (both at once), in a transaction of the caller's.
          store.db.transaction().execute(async (tx) => {
            const { ipv4: v4, ipv6: v6 } = await pool.allocateAll(vm, 'h1', 1, tx);
            return { vm, v4, v6 };
          }),
        ),
      );
      const ok = results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
      assert.equal(ok.length, 11, 'as many as the IPv4 pool has');
      const v4 = ok.flatMap((r) => r.v4);
      assert.equal(new Set(v4).size, 11, 'no address twice');
      assert.ok(
        v4.every((a) => a.startsWith('192.0.2.') && !['192.0.2.1', '192.0.2.2', '192.0.2.3'].includes(a)),
      );
      const v6 = ok.map((r) => r.v6?.prefix);
      assert.equal(new Set(v6).size, 11, 'no prefix twice');
      const failed = results.filter((r) => r.status === 'rejected');
      assert.deepEqual(
        failed
          .map((f) => String(f.reason))
          .filter((r) => !/No free IPv4 address in pool 192.0.2.0\/28/.test(r)),
        [],
        'every refusal is the pool being full',
      );
      // The failed ones left nothing held (all or nothing).
      const held = await store.db
        .selectFrom('ipv6_prefixes')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('vm_id', 'is not', null)
        .executeTakeFirstOrThrow();
      assert.equal(Number(held.n), 11);
      // Released prefixes and addresses, concurrently taken again (one family at a time): each once.
      await Promise.all(ok.slice(0, 4).map((r) => pool.release(r.vm)));
      const again = await Promise.all(
        ['a', 'b', 'c', 'd'].map((x) =>
          store.db.transaction().execute(async (tx) => ({
            v4: await pool.allocate(`vm-${x}`, 'h1', 1, tx),
            v6: await pool.allocateIpv6(`vm-${x}`, 'h1', tx),
          })),
        ),
      );
      assert.equal(new Set(again.map((r) => r.v6?.prefix)).size, 4);
      assert.equal(new Set(again.flatMap((r) => r.v4)).size, 4);
      const all = await store.db.selectFrom('ipv6_prefixes').select(['idx', 'vm_id']).execute();
      assert.equal(all.length, 11, 'released prefixes were reused, no new index');
    }));
}

/**
 * PostgreSQL: the pool v4 of 192.0.2.0/29 with two free addresses, .2 and .3 (.4 to .6
 * reserved), on h1; and what its addresses' holders are, once the test's transactions ended.
 */
async function twoAddressPool(store: Store, audit: AuditContext): Promise<() => Promise<string[]>> {
  const v4 = { name: 'v4', family: 'ipv4' as const, network: '192.0.2.0/29', hosts: ['h1'] };
  await createPool(store.db, { ...v4, reserved: ['192.0.2.4', '192.0.2.5', '192.0.2.6'] }, Date.now(), audit);
  return async () =>
    (
      await store.db
        .selectFrom('ip_addresses')
        .select(['address', 'vm_id'])
        .where('vm_id', 'is not', null)
        .orderBy('address')
        .execute()
    ).map((r) => `${r.address} ${r.vm_id}`);
}

/** A promise the test resolves when it chooses (`open`). */
function gate(): { open: () => void; opened: Promise<void> } {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

if (testStores().includes('postgres')) {
  test('two allocations that each hold an address the other waits for (postgres): one gives way as a conflict, holding nothing; the other gets both', () =>
    withPools('postgres', ['h1'], async ({ store, pool, audit }) => {
      const holders = await twoAddressPool(store, audit);
      // Each takes one, then (both holding theirs, uncommitted) wants a second: each look waits
      // for the other's address, a deadlock that PostgreSQL breaks by failing one look.
      let arrived = 0;
      const bothHoldOne = gate();
      const results = await Promise.allSettled(
        ['vm-a', 'vm-b'].map((vm) =>
          store.db.transaction().execute(async (tx) => {
            const first = await pool.allocate(vm, 'h1', 1, tx);
            if (++arrived === 2) bothHoldOne.open();
            await bothHoldOne.opened;
            return { vm, first, both: await pool.allocate(vm, 'h1', 2, tx) };
          }),
        ),
      );
      const ok = results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
      const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
      assert.equal(ok.length, 1, 'one of them gets both addresses');
      assert.equal(failed.length, 1);
      assert.deepEqual([...(ok[0]?.both ?? [])].sort(), ['192.0.2.2', '192.0.2.3']);
      assert.equal(ok[0]?.both[0], ok[0]?.first[0], 'its primary is the one it took first');
      // The other's error is PostgreSQL's deadlock after its look was made again, a conflict
      // that a job's next attempt retries (503 to an API caller), not "no free address".
      assert.equal(isStoreUnavailable(failed[0]), true, String(failed[0]));
      assert.match(String(failed[0]), /deadlock detected/);
      assert.deepEqual(
        await holders(),
        ['192.0.2.2', '192.0.2.3'].map((a) => `${a} ${ok[0]?.vm}`),
        'the one that gave way holds nothing',
      );
    }));

  test('a look for a free address that waited for a taken row another look locked (postgres): broken as a deadlock, it looks again, and the last free address is taken', () =>
    withPools('postgres', ['h1'], async ({ store, pool, audit }) => {
      const holders = await twoAddressPool(store, audit);
      const lockWaiters = () =>
        sql<{ n: string }>`select count(*) as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'`
          .execute(store.db)
          .then((r) => Number(r.rows[0]?.n));
      const [cHolds, cCommits, oneHolds, oneWantsMore] = [gate(), gate(), gate(), gate()];
      const inTx = (body: (tx: Kysely<Database>) => Promise<string[]>) =>
        store.db.transaction().execute(body);
      // c takes .2 and holds it, uncommitted.
      const c = inTx(async (tx) => {
        const got = await pool.allocate('vm-c', 'h1', 1, tx);
        cHolds.open();
        await cCommits.opened;
        return got;
      });
      await cHolds.opened;
      // one takes .3, then wants a second address.
      const one = inTx(async (tx) => {
        await pool.allocate('vm-1', 'h1', 1, tx);
        oneHolds.open();
        await oneWantsMore.opened;
        return pool.allocate('vm-1', 'h1', 2, tx);
      });
      await oneHolds.opened;
      // two finds none to take (.2 and .3 held) and looks: it waits for c at .2.
      const two = inTx((tx) => pool.allocate('vm-2', 'h1', 1, tx));
      await waitUntil('the second allocation to wait for the first', async () => (await lockWaiters()) >= 1);
      // one's look waits at .2 behind two.
      oneWantsMore.open();
      await waitUntil('both looks to wait', async () => (await lockWaiters()) >= 2);
      // c commits: two locks .2 as c left it (taken), goes on to .3 and waits for one; one waits
      // for two's lock on .2. PostgreSQL breaks it by failing one of the looks, which looks again.
      cCommits.open();
      const [rc, rOne, rTwo] = await Promise.allSettled([c, one, two]);
      assert.deepEqual(rc, { status: 'fulfilled', value: ['192.0.2.2'] });
      assert.equal(rOne.status, 'rejected');
      assert.match(
        String(rOne.reason),
        /No free IPv4 address in pool 192.0.2.0\/29/,
        'one is refused: the pool is full',
      );
      assert.deepEqual(
        rTwo,
        { status: 'fulfilled', value: ['192.0.2.3'] },
        'two gets the address one gave back',
      );
      assert.deepEqual(await holders(), ['192.0.2.2 vm-c', '192.0.2.3 vm-2']);
    }));

  test('a look for a free address that fails otherwise than by a deadlock (postgres): its error goes to the caller as a conflict, nothing taken', () =>
    withPools('postgres', ['h1'], async ({ store, pool, audit }) => {
      const holders = await twoAddressPool(store, audit);
      const [holding, done] = [gate(), gate()];
      // c holds both addresses, uncommitted; the allocation waits for them no longer than 100 ms.
      const c = store.db.transaction().execute(async (tx) => {
        await pool.allocate('vm-c', 'h1', 2, tx);
        holding.open();
        await done.opened;
      });
      await holding.opened;
      const refused = await store.db
        .transaction()
        .execute(async (tx) => {
          await sql`set local lock_timeout = '100ms'`.execute(tx);
          return pool.allocate('vm-1', 'h1', 1, tx);
        })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      done.open();
      await c;
      assert.match(String(refused), /lock timeout/);
      assert.equal(isStoreUnavailable(refused), true, 'a conflict, for the job to try again');
      assert.deepEqual(await holders(), ['192.0.2.2 vm-c', '192.0.2.3 vm-c']);
    }));
}
