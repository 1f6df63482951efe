import type { Kysely } from 'kysely';
import {
  addressesOf,
  claimAddress,
  countPoolAddresses,
  insertPoolAddresses,
  nextFreeAddress,
  releaseAddresses,
} from '../store/repos/ip-addresses.ts';
import type { Database } from '../store/schema.ts';
import { DriverError } from './driver.ts';

/** The provider's IPv4 pool, kept in the store so every process and driver shares it. */
export interface IpPool {
  readonly cidr: string;
  /** Tops the VM up to `count` addresses (idempotent) and returns all of them, primary first. */
  allocate(vmId: string, count: number): Promise<string[]>;
  /** Shrinks the VM to `count` addresses, releasing the last ones; the primary stays. */
  shrink(vmId: string, count: number): Promise<string[]>;
  release(vmId: string): Promise<void>;
  addressesOf(vmId: string): Promise<string[]>;
}

const toText = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');

/** Usable host addresses of a CIDR: not the network, not the broadcast, not the gateway (first). */
export function cidrHosts(cidr: string): { num: number; text: string }[] {
  const [ip, bits] = cidr.split('/');
  const base = ip!.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(bits));
  const network = base - (base % size);
  const out: { num: number; text: string }[] = [];
  for (let n = network + 2; n < network + size - 1; n++) out.push({ num: n, text: toText(n) });
  return out;
}

export async function createIpPool(db: Kysely<Database>, cidr: string, now: () => number): Promise<IpPool> {
  const hosts = cidrHosts(cidr);
  if ((await countPoolAddresses(db)) < hosts.length) await insertPoolAddresses(db, hosts);
  return {
    cidr,
    async allocate(vmId, count) {
      let have = await addressesOf(db, vmId);
      while (have.length < count) {
        const num = await nextFreeAddress(db, 0);
        if (num === undefined) {
          throw new DriverError(`No free IPv4 address in pool ${cidr}`, { transient: false });
        }
        // Another allocator may take the same address first; the next read no longer sees it as free.
        if (await claimAddress(db, num, vmId, now())) have = await addressesOf(db, vmId);
      }
      return have;
    },
    async shrink(vmId, count) {
      const have = await addressesOf(db, vmId);
      if (have.length > count) await releaseAddresses(db, vmId, now(), have.slice(Math.max(1, count)));
      return addressesOf(db, vmId);
    },
    async release(vmId) {
      await releaseAddresses(db, vmId, now());
    },
    addressesOf: (vmId) => addressesOf(db, vmId),
  };
}
