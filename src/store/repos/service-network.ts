import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** One of a VM's IPv4 addresses, with its pool's network and gateway (null before adoption). */
export interface Ipv4Lease {
  readonly address: string;
  /** The pool's network in CIDR form (`192.0.2.0/24`). */
  readonly network: string | null;
  readonly gateway: string | null;
}

/** A VM's IPv6 prefix, its address in it, and the pool it came from. */
export interface Ipv6Lease {
  /** The prefix handed to the service (`2001:db8:4000:1::/64`). */
  readonly prefix: string;
  /** The service's address in the prefix (`2001:db8:4000:1::1`). */
  readonly address: string;
  readonly gateway: string;
  /** The pool's prefix (`2001:db8:4000::/48`). */
  readonly poolNetwork: string;
}

/** Everything a VM holds of the provider's networks. */
export interface VmNetwork {
  /** In allocation order: the first is primary. */
  readonly ipv4: Ipv4Lease[];
  readonly ipv6: Ipv6Lease | null;
}

/** The VM's addresses with their pools (one read per family). */
export async function networkOf(db: Kysely<Database>, vmId: string): Promise<VmNetwork> {
  const v4 = await db
    .selectFrom('ip_addresses as a')
    .leftJoin('ip_pools as p', 'p.id', 'a.pool_id')
    .select(['a.address', 'p.network', 'p.gateway'])
    .where('a.vm_id', '=', vmId)
    .orderBy('a.allocated_at')
    .orderBy('a.address_num')
    .execute();
  const v6 = await db
    .selectFrom('ipv6_prefixes as x')
    .innerJoin('ip_pools as p', 'p.id', 'x.pool_id')
    .select(['x.prefix', 'x.address', 'p.gateway', 'p.network'])
    .where('x.vm_id', '=', vmId)
    .orderBy('x.allocated_at')
    .executeTakeFirst();
  return {
    ipv4: v4.map((r) => ({ address: r.address, network: r.network, gateway: r.gateway })),
    ipv6: v6
      ? { prefix: v6.prefix, address: v6.address, gateway: v6.gateway, poolNetwork: v6.network }
      : null,
  };
}

/** The VM's IPv6 prefix as the details show it (one indexed read); null if it has none. */
export async function ipv6Of(
  db: Kysely<Database>,
  vmId: string,
): Promise<{ prefix: string; address: string; gateway: string } | null> {
  const row = await db
    .selectFrom('ipv6_prefixes as x')
    .innerJoin('ip_pools as p', 'p.id', 'x.pool_id')
    .select(['x.prefix', 'x.address', 'p.gateway'])
    .where('x.vm_id', '=', vmId)
    .executeTakeFirst();
  return row ? { prefix: row.prefix, address: row.address, gateway: row.gateway } : null;
}
