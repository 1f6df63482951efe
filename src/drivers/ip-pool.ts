import type { Kysely } from 'kysely';
import {
  type Allocation,
  addressesOf,
  allocationsOf,
  hasFreeAddress,
  releaseAddresses,
  releasedByShrink,
  takeFreeAddress,
} from '../store/repos/ip-addresses.ts';
import {
  holdingsOf,
  type Ipv6Held,
  ipv6HeldOf,
  poolsForHost,
  rangeOf,
  releaseIpv6Prefix,
  seedDefaultPool,
  takeNewIpv6Prefix,
} from '../store/repos/ip-pools.ts';
import type { Database, IpPoolTable } from '../store/schema.ts';
import { DriverError } from './driver.ts';

export type { Ipv6Held };

/**
 * The provider's address pools (records in the store, OPS/ip-pools), shared by every process and
 * driver: a VM's IPv4 addresses come from the IPv4 pools serving its host, its IPv6 prefix from
 * an IPv6 pool serving it (poolsForHost). The host is the one the VM is placed on at create;
 * a VM moved to another host keeps its addresses. Each method runs in its own transaction, or in
 * `tx` when a caller's change must include it.
 */
export interface IpPool {
  /**
   * Tops the VM up to `count` IPv4 addresses (idempotent) from the pools of `hostId`, oldest pool
   * first, and returns all of them, primary first. All or nothing: if the pools run out, the VM
   * keeps only the addresses it had.
   */
  allocate(vmId: string, hostId: string, count: number, tx?: Kysely<Database>): Promise<string[]>;
  /**
   * Shrinks the VM to `count` addresses, releasing the last ones (releasedByShrink); the primary
   * stays. The PTR records set for them are forgotten with them (releaseAddresses).
   */
  shrink(vmId: string, count: number, tx?: Kysely<Database>): Promise<string[]>;
  /**
   * Gives the VM a prefix of an IPv6 pool of `hostId` (idempotent: the one it holds). Undefined
   * when the host has no IPv6 pool (no IPv6 then, not an error); a DriverError when its pools
   * are full.
   */
  allocateIpv6(vmId: string, hostId: string, tx?: Kysely<Database>): Promise<Ipv6Held | undefined>;
  /**
   * allocate and allocateIpv6 at once, in one transaction (`tx`, or its own): what the VM holds
   * and the host's pools of both families are one read each (a VM's create).
   */
  allocateAll(
    vmId: string,
    hostId: string,
    count: number,
    tx?: Kysely<Database>,
  ): Promise<{ readonly ipv4: string[]; readonly ipv6: Ipv6Held | undefined }>;
  /** Gives back everything the VM holds: IPv4 addresses and IPv6 prefix, with their PTR records' rows. */
  release(vmId: string, tx?: Kysely<Database>): Promise<void>;
  addressesOf(vmId: string): Promise<string[]>;
}

/**
 * The pools, with the old setting (`defaultCidr`, VRP_SIM_IP_POOL) turned into the pool
 * `default` at the first start that has pools as records (seedDefaultPool).
 */
export async function createIpPool(
  db: Kysely<Database>,
  defaultCidr: string,
  now: () => number,
): Promise<IpPool> {
  await seedDefaultPool(db, defaultCidr, now());
  /** Runs `body` in `tx` if given, else in a transaction of its own. */
  const within = <T>(tx: Kysely<Database> | undefined, body: (tx: Kysely<Database>) => Promise<T>) =>
    tx ? body(tx) : db.transaction().execute(body);
  /**
   * Tops the VM, which holds `have`, up to `count` IPv4 addresses from `records` (the host's
   * IPv4 pools, oldest first); all of them, primary first.
   */
  async function topUp(
    tx: Kysely<Database>,
    vmId: string,
    hostId: string,
    count: number,
    have: readonly Allocation[],
    records: readonly IpPoolTable[],
  ): Promise<string[]> {
    const addresses = have.map((a) => a.address);
    if (addresses.length >= count) return addresses;
    const pools = records.map(rangeOf);
    let last = have.at(-1)?.allocatedAt ?? 0;
    let p = 0;
    while (addresses.length < count) {
      const pool = pools[p];
      if (pool === undefined)
        throw new DriverError(
          pools.length === 0
            ? `No IPv4 address pool serves host ${hostId}`
            : `No free IPv4 address in pool ${records.map((r) => r.network).join(', ')} (host ${hostId})`,
          { transient: false },
        );
      // Each address at least a millisecond after the VM's previous one: the order of
      // allocated_at is the allocation order, so the primary never changes.
      const at = Math.max(now(), last + 1);
      const taken = await takeFreeAddress(tx, pool, vmId, at);
      if (taken !== undefined) {
        addresses.push(taken);
        last = at;
        continue;
      }
      // None taken: the pool is exhausted (then the next pool), or another allocator took
      // the address between the read and the write (then the next try reads another).
      if (!(await hasFreeAddress(tx, pool))) p++;
    }
    return addresses;
  }
  /** The VM's prefix: `held`, or a new one of `pools` (the host's IPv6 pools); none if there are none. */
  async function prefix(
    tx: Kysely<Database>,
    vmId: string,
    hostId: string,
    pools: readonly IpPoolTable[],
    held: Ipv6Held | undefined,
  ): Promise<Ipv6Held | undefined> {
    const given = held ?? (await takeNewIpv6Prefix(tx, pools, vmId, now()));
    if (given === undefined && pools.length > 0)
      throw new DriverError(`No free IPv6 prefix in the pools of host ${hostId}`, { transient: false });
    return given;
  }
  return {
    allocate: (vmId, hostId, count, tx) =>
      within(tx, async (tx) => {
        const have = await allocationsOf(tx, vmId);
        if (have.length >= count) return have.map((a) => a.address);
        return topUp(tx, vmId, hostId, count, have, (await poolsForHost(tx, hostId)).ipv4);
      }),
    allocateIpv6: (vmId, hostId, tx) =>
      within(tx, async (tx) => {
        const held = await ipv6HeldOf(tx, vmId);
        return held ?? prefix(tx, vmId, hostId, (await poolsForHost(tx, hostId)).ipv6, undefined);
      }),
    allocateAll: (vmId, hostId, count, tx) =>
      within(tx, async (tx) => {
        const held = await holdingsOf(tx, vmId);
        const pools = await poolsForHost(tx, hostId);
        return {
          ipv4: await topUp(tx, vmId, hostId, count, held.ipv4, pools.ipv4),
          ipv6: await prefix(tx, vmId, hostId, pools.ipv6, held.ipv6),
        };
      }),
    shrink: (vmId, count, tx) =>
      within(tx, async (tx) => {
        await releaseAddresses(tx, vmId, now(), releasedByShrink(await addressesOf(tx, vmId), count));
        return addressesOf(tx, vmId);
      }),
    release: (vmId, tx) =>
      within(tx, async (tx) => {
        await releaseAddresses(tx, vmId, now());
        await releaseIpv6Prefix(tx, vmId, now());
      }),
    addressesOf: (vmId) => addressesOf(db, vmId),
  };
}
