import type { Kysely } from 'kysely';
import {
  type AddressRange,
  addressesOf,
  allocationsOf,
  countPoolAddresses,
  hasFreeAddress,
  insertPoolRange,
  releaseAddresses,
  takeFreeAddress,
} from '../store/repos/ip-addresses.ts';
import type { Database } from '../store/schema.ts';
import { DriverError } from './driver.ts';

/**
 * The provider's IPv4 pool, kept in the store so every process and driver shares it. Each
 * method runs in its own transaction, or in `tx` when a caller's change must include it.
 */
export interface IpPool {
  readonly cidr: string;
  /**
   * Tops the VM up to `count` addresses (idempotent) and returns all of them, primary first.
   * All or nothing: if the pool runs out, the VM keeps only the addresses it had.
   */
  allocate(vmId: string, count: number, tx?: Kysely<Database>): Promise<string[]>;
  /** Shrinks the VM to `count` addresses, releasing the last ones; the primary stays. */
  shrink(vmId: string, count: number, tx?: Kysely<Database>): Promise<string[]>;
  release(vmId: string, tx?: Kysely<Database>): Promise<void>;
  addressesOf(vmId: string): Promise<string[]>;
}

/** Usable host addresses of a CIDR: not the network, not the broadcast, not the gateway (first). */
function cidrRange(cidr: string): AddressRange {
  const [ip = '', bits] = cidr.split('/');
  const base = ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(bits));
  const network = base - (base % size);
  return { first: network + 2, last: network + size - 2 };
}

/**
 * Adds the addresses of `range` the store does not have yet: a new or widened pool setting takes
 * effect at start-up. Nothing is removed; addresses outside the range are just no longer handed out.
 */
async function addRange(db: Kysely<Database>, range: AddressRange): Promise<void> {
  if ((await countPoolAddresses(db, range)) === range.last - range.first + 1) return;
  await insertPoolRange(db, range);
}

export async function createIpPool(db: Kysely<Database>, cidr: string, now: () => number): Promise<IpPool> {
  const range = cidrRange(cidr);
  await addRange(db, range);
  /** Runs `body` in `tx` if given, else in a transaction of its own. */
  const within = <T>(tx: Kysely<Database> | undefined, body: (tx: Kysely<Database>) => Promise<T>) =>
    tx ? body(tx) : db.transaction().execute(body);
  return {
    cidr,
    allocate: (vmId, count, tx) =>
      within(tx, async (tx) => {
        const have = await allocationsOf(tx, vmId);
        const addresses = have.map((a) => a.address);
        let last = have.at(-1)?.allocatedAt ?? 0;
        while (addresses.length < count) {
          // Each address at least a millisecond after the VM's previous one: the order of
          // allocated_at is the allocation order, so the primary never changes.
          const at = Math.max(now(), last + 1);
          const taken = await takeFreeAddress(tx, range, vmId, at);
          if (taken !== undefined) {
            addresses.push(taken);
            last = at;
            continue;
          }
          // None taken: the pool is exhausted, or another allocator took the address between
          // the read and the write (then the next try reads another).
          if (!(await hasFreeAddress(tx, range)))
            throw new DriverError(`No free IPv4 address in pool ${cidr}`, { transient: false });
        }
        return addresses;
      }),
    shrink: (vmId, count, tx) =>
      within(tx, async (tx) => {
        const have = await addressesOf(tx, vmId);
        if (have.length > count) await releaseAddresses(tx, vmId, now(), have.slice(Math.max(1, count)));
        return addressesOf(tx, vmId);
      }),
    release: (vmId, tx) => within(tx, (tx) => releaseAddresses(tx, vmId, now())),
    addressesOf: (vmId) => addressesOf(db, vmId),
  };
}
