import { type Kysely, sql, type Transaction } from 'kysely';
import { ApiError } from '../../domain/errors.ts';
import { uuidv7 } from '../../domain/ids.ts';
import {
  addressValue,
  contains,
  overlaps,
  parseNetwork,
  prefixAt,
  prefixCount,
} from '../../domain/ip-math.ts';
import { checkPool, ipv4Handout, type PoolFields, type PoolSpec } from '../../domain/ip-pools.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import { dialectOf } from '../dialect-of.ts';
import { stringList } from '../json-columns.ts';
import { once } from '../once.ts';
import { prepare, slot } from '../prepared.ts';
import type { Database, IpPoolTable } from '../schema.ts';
import { readTogether } from '../statement-batch.ts';
import { type AuditContext, recordAudit } from './audit.ts';
import { type AddressRange, type Allocation, insertPoolRange, toAllocation } from './ip-addresses.ts';

/** A pool as the operator sees it: its record, the hosts it serves, how much of it is held. */
export interface PoolView extends PoolSpec {
  readonly id: string;
  readonly hostIds: readonly string[];
  /** IPv4: addresses handed out (first..last without gateway and reserved); IPv6: prefixes. */
  readonly total: number;
  readonly used: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** What the operator gives for a new pool: its fields and the hosts (ids or names) it serves. */
export interface NewPool extends PoolFields {
  readonly hosts: readonly string[];
}

/** A change to a pool: only the fields given change (family, network and per-service size stay). */
export interface PoolChange {
  readonly name?: string | undefined;
  readonly gateway?: string | undefined;
  readonly first?: string | undefined;
  readonly last?: string | undefined;
  readonly reserved?: readonly string[] | undefined;
  readonly hosts?: readonly string[] | undefined;
}

const poolNotFound = (id: string) =>
  new ApiError('pool_not_found', `No address pool ${JSON.stringify(id.slice(0, 100))}`);

function specOf(r: IpPoolTable): PoolSpec {
  return {
    name: r.name,
    family: r.family,
    network: r.network,
    gateway: r.gateway,
    first: r.first_address,
    last: r.last_address,
    reserved: stringList(r.reserved),
    assignPrefixLength: r.assign_prefix_length === null ? null : Number(r.assign_prefix_length),
  };
}

/** The addresses an IPv4 pool's record hands out. */
export function rangeOf(r: IpPoolTable): AddressRange {
  return { poolId: r.id, ...ipv4Handout(specOf(r)) };
}

/** Pools read with their hosts and use (one read per table, not per pool). */
async function viewsOf(db: Kysely<Database>, rows: readonly IpPoolTable[]): Promise<PoolView[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [hosts, v4, v6] = await Promise.all([
    db
      .selectFrom('ip_pool_hosts')
      .select(['pool_id', 'host_id'])
      .where('pool_id', 'in', ids)
      .orderBy('host_id')
      .execute(),
    db
      .selectFrom('ip_addresses')
      .select((eb) => ['pool_id', eb.fn.countAll<number | string>().as('n')])
      .where('pool_id', 'in', ids)
      .where('vm_id', 'is not', null)
      .groupBy('pool_id')
      .execute(),
    db
      .selectFrom('ipv6_prefixes')
      .select((eb) => ['pool_id', eb.fn.countAll<number | string>().as('n')])
      .where('pool_id', 'in', ids)
      .where('vm_id', 'is not', null)
      .groupBy('pool_id')
      .execute(),
  ]);
  const used = new Map([...v4, ...v6].map((r) => [r.pool_id, Number(r.n)]));
  return rows.map((r) => {
    const spec = specOf(r);
    let total: number;
    if (r.family === 'ipv4') {
      const h = ipv4Handout(spec);
      total = h.last - h.first + 1 - h.excluded.length;
    } else {
      const n = parseNetwork(r.network, 'ipv6');
      total = n ? prefixCount(n, spec.assignPrefixLength ?? 64) - (gatewayIndex(r) === undefined ? 0 : 1) : 0;
    }
    return {
      ...spec,
      id: r.id,
      hostIds: hosts.filter((h) => h.pool_id === r.id).map((h) => h.host_id),
      total,
      used: used.get(r.id) ?? 0,
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
    };
  });
}

/** Every pool, oldest first (the order in which a host's pools are tried). */
export async function listPools(db: Kysely<Database>): Promise<PoolView[]> {
  return viewsOf(
    db,
    await db.selectFrom('ip_pools').selectAll().orderBy('created_at').orderBy('id').execute(),
  );
}

/** One pool; 404 `pool_not_found`. */
export async function getPool(db: Kysely<Database>, id: string): Promise<PoolView> {
  const row = await db.selectFrom('ip_pools').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw poolNotFound(id);
  const [view] = await viewsOf(db, [row]);
  if (!view) throw poolNotFound(id);
  return view;
}

/**
 * Pool changes take turns: each first writes this marker's row, whose lock the next one waits
 * for on PostgreSQL (SQLite has one writer anyway), so two pools created together cannot both
 * pass the overlap check.
 */
async function lockPools(tx: Transaction<Database>, now: number): Promise<void> {
  await tx
    .insertInto('meta')
    .values({ key: 'ip_pools_changed', value: String(now) })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: String(now) }))
    .execute();
}

/** 400 `pool_overlap` if another pool of the family shares an address with `spec`'s network. */
async function checkNoOverlap(tx: Kysely<Database>, spec: PoolSpec, self?: string): Promise<void> {
  const mine = parseNetwork(spec.network, spec.family);
  const others = await tx
    .selectFrom('ip_pools')
    .select(['id', 'name', 'network'])
    .where('family', '=', spec.family)
    .$if(self !== undefined, (q) => q.where('id', '!=', self ?? ''))
    .execute();
  for (const o of others) {
    const theirs = parseNetwork(o.network, spec.family);
    if (mine && theirs && overlaps(mine, theirs))
      throw new ApiError('pool_overlap', `${spec.network} overlaps pool ${o.name} (${o.network})`);
  }
}

async function checkNameFree(tx: Kysely<Database>, name: string, self?: string): Promise<void> {
  const taken = await tx
    .selectFrom('ip_pools')
    .select('id')
    .where('name', '=', name)
    .$if(self !== undefined, (q) => q.where('id', '!=', self ?? ''))
    .executeTakeFirst();
  if (taken) throw new ApiError('pool_name_taken', `Another pool is named ${JSON.stringify(name)}`);
}

/** The ids of `hosts` (each an id or a name); 400 `unknown_host` naming those that are neither. */
async function hostIdsOf(tx: Kysely<Database>, hosts: readonly string[]): Promise<string[]> {
  if (hosts.length === 0) return [];
  const rows = await tx
    .selectFrom('hypervisor_hosts')
    .select(['id', 'name'])
    .where((eb) => eb.or([eb('id', 'in', hosts), eb('name', 'in', hosts)]))
    .execute();
  const unknown = hosts.filter((h) => !rows.some((r) => r.id === h || r.name === h));
  if (unknown.length > 0)
    throw new ApiError(
      'unknown_host',
      `No host ${unknown.map((h) => JSON.stringify(h.slice(0, 100))).join(', ')}`,
    );
  return [
    ...new Set(hosts.map((h) => (rows.find((r) => r.id === h) ?? rows.find((r) => r.name === h))?.id ?? h)),
  ];
}

async function setHosts(tx: Kysely<Database>, poolId: string, hostIds: readonly string[]): Promise<void> {
  await tx.deleteFrom('ip_pool_hosts').where('pool_id', '=', poolId).execute();
  if (hostIds.length > 0)
    await tx
      .insertInto('ip_pool_hosts')
      .values(hostIds.map((host_id) => ({ pool_id: poolId, host_id })))
      .execute();
}

async function writeNewPool(
  tx: Transaction<Database>,
  id: string,
  spec: PoolSpec,
  now: number,
): Promise<void> {
  await tx
    .insertInto('ip_pools')
    .values({
      id,
      name: spec.name,
      family: spec.family,
      network: spec.network,
      gateway: spec.gateway,
      first_address: spec.first,
      last_address: spec.last,
      reserved: JSON.stringify(spec.reserved),
      assign_prefix_length: spec.assignPrefixLength,
      created_at: now,
      updated_at: now,
    })
    .execute();
  if (spec.family === 'ipv4') await insertPoolRange(tx, { poolId: id, ...ipv4Handout(spec) });
}

/**
 * A new pool (docs/operator-api.md#address-pools): 400 as checkPool says, `pool_name_taken`,
 * `pool_overlap`, `unknown_host`; its IPv4 addresses written as rows, audited in the same
 * transaction.
 */
export async function createPool(
  db: Kysely<Database>,
  input: NewPool,
  now: number,
  audit: AuditContext,
): Promise<PoolView> {
  const spec = checkPool(input);
  const id = uuidv7(now, randomPoolBytes(16));
  await db.transaction().execute(async (tx) => {
    await lockPools(tx, now);
    await checkNameFree(tx, spec.name);
    await checkNoOverlap(tx, spec);
    const hostIds = await hostIdsOf(tx, input.hosts);
    await writeNewPool(tx, id, spec, now);
    await setHosts(tx, id, hostIds);
    await recordAudit(tx, audit, { target: { type: 'ip_pool', id } }, now);
  });
  return getPool(db, id);
}

/**
 * Changes a pool's name, gateway, range, reserved addresses or hosts. Addresses held outside a
 * narrowed range stay with their VMs (they are just not handed out again once released); a
 * widened range gets its rows.
 */
export async function updatePool(
  db: Kysely<Database>,
  id: string,
  change: PoolChange,
  now: number,
  audit: AuditContext,
): Promise<PoolView> {
  await db.transaction().execute(async (tx) => {
    await lockPools(tx, now);
    const row = await tx.selectFrom('ip_pools').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw poolNotFound(id);
    const was = specOf(row);
    const spec = checkPool({
      name: change.name ?? was.name,
      family: was.family,
      network: was.network,
      gateway: change.gateway ?? was.gateway,
      first: change.first ?? was.first ?? undefined,
      last: change.last ?? was.last ?? undefined,
      reserved: change.reserved ?? was.reserved,
      assignPrefixLength: was.assignPrefixLength ?? undefined,
    });
    await checkNameFree(tx, spec.name, id);
    await tx
      .updateTable('ip_pools')
      .set({
        name: spec.name,
        gateway: spec.gateway,
        first_address: spec.first,
        last_address: spec.last,
        reserved: JSON.stringify(spec.reserved),
        updated_at: now,
      })
      .where('id', '=', id)
      .execute();
    if (spec.family === 'ipv4') await insertPoolRange(tx, { poolId: id, ...ipv4Handout(spec) });
    if (change.hosts !== undefined) await setHosts(tx, id, await hostIdsOf(tx, change.hosts));
    await recordAudit(tx, audit, { target: { type: 'ip_pool', id } }, now);
  });
  return getPool(db, id);
}

/** Removes a pool none of whose addresses or prefixes is held; 409 `pool_in_use` otherwise. */
export async function deletePool(
  db: Kysely<Database>,
  id: string,
  now: number,
  audit: AuditContext,
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await lockPools(tx, now);
    // The pool's row first: an allocation from it holds a share lock on it (poolsForHost) until
    // its commit, so what it took is counted below.
    const locked = await tx
      .updateTable('ip_pools')
      .set({ updated_at: now })
      .where('id', '=', id)
      .executeTakeFirst();
    if (locked.numUpdatedRows === 0n) throw poolNotFound(id);
    const held = async (table: 'ip_addresses' | 'ipv6_prefixes') =>
      Number(
        (
          await tx
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number | string>().as('n'))
            .where('pool_id', '=', id)
            .where('vm_id', 'is not', null)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const n = (await held('ip_addresses')) + (await held('ipv6_prefixes'));
    if (n > 0)
      throw new ApiError(
        'pool_in_use',
        `${n === 1 ? '1 address or prefix' : `${n} addresses or prefixes`} of this pool ${n === 1 ? 'is' : 'are'} held by services: terminate them first`,
      );
    await tx.deleteFrom('ip_addresses').where('pool_id', '=', id).execute();
    await tx.deleteFrom('ipv6_prefixes').where('pool_id', '=', id).execute();
    await tx.deleteFrom('ip_pool_hosts').where('pool_id', '=', id).execute();
    await tx.deleteFrom('ip_pools').where('id', '=', id).execute();
    await recordAudit(tx, audit, { target: { type: 'ip_pool', id } }, now);
  });
}

/** The pools serving a host, each family's oldest first. */
export interface PoolsServing {
  readonly ipv4: readonly IpPoolTable[];
  readonly ipv6: readonly IpPoolTable[];
}

/**
 * The pools that serve the host, for each family: those of the family bound to it, or, when no
 * pool of the family names the host, the family's pools bound to no host (the fallback pools,
 * such as `default`, which the old setting became). One statement for both families (a VM's
 * create asks both). Called in an allocation's transaction: on PostgreSQL it holds a share lock
 * on the pools it returns until the commit, so a pool is not removed while an address is being
 * taken from it (deletePool waits, then counts it); the bindings themselves are not locked, as
 * nothing that changes them depends on the addresses taken (setHosts).
 */
export async function poolsForHost(db: Kysely<Database>, hostId: string): Promise<PoolsServing> {
  const rows = await readTogether(db, poolsServing.compile(db, { hostId }), hostId);
  return {
    ipv4: rows.filter((p) => p.family === 'ipv4'),
    ipv6: rows.filter((p) => p.family === 'ipv6'),
  };
}

/** poolsForHost's statement: a pool's family decides which of the host's bindings count for it. */
const poolsServing = prepare({ hostId: slot<string>() }, (db, s) =>
  db
    .selectFrom('ip_pools as p')
    .selectAll('p')
    .where(({ and, or, not, exists, selectFrom }) => {
      const bindings = selectFrom('ip_pool_hosts as h')
        .select('h.host_id')
        .whereRef('h.pool_id', '=', 'p.id');
      const hostHasOwnPool = selectFrom('ip_pool_hosts as h')
        .innerJoin('ip_pools as q', 'q.id', 'h.pool_id')
        .select('h.host_id')
        .where('h.host_id', '=', s.hostId)
        .whereRef('q.family', '=', 'p.family');
      return or([
        exists(bindings.where('h.host_id', '=', s.hostId)),
        and([not(exists(bindings)), not(exists(hostHasOwnPool))]),
      ]);
    })
    .orderBy('p.created_at')
    .orderBy('p.id')
    .$if(dialectOf(db) === 'postgres', (q) => q.forShare()),
);

/** Set once the old setting has become the `default` pool: later starts leave pools alone. */
const SEEDED_KEY = 'ip_pools_seeded';

/**
 * The first start with pools as records turns the old setting (VRP_SIM_IP_POOL) into the pool
 * `default`, bound to no host (so it serves every host no IPv4 pool names), unless an IPv4 pool
 * exists already: its gateway is the network's first address, it hands out the rest but the
 * broadcast address, as the setting did. Every address row from before (pool_id null) becomes
 * its, held ones included, so existing services keep their addresses. Done once, by one of
 * several processes starting together (the marker's insert decides).
 */
export async function seedDefaultPool(db: Kysely<Database>, cidr: string, now: number): Promise<void> {
  await once(db, SEEDED_KEY, now, async (tx) => {
    await lockPools(tx, now);
    if (await tx.selectFrom('ip_pools').select('id').where('family', '=', 'ipv4').executeTakeFirst()) return;
    const n = parseNetwork(cidr, 'ipv4');
    if (!n) throw new Error(`VRP_SIM_IP_POOL ${cidr} is not an IPv4 network`);
    const spec = checkPool({
      name: 'default',
      family: 'ipv4',
      network: cidr,
      first: formatV4(n.base + 2n),
    });
    const id = uuidv7(now, randomPoolBytes(16));
    await writeNewPool(tx, id, spec, now);
    await tx.updateTable('ip_addresses').set({ pool_id: id }).where('pool_id', 'is', null).execute();
  });
}

const formatV4 = (v: bigint) => [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 255n)).join('.');

/**
 * The index of the IPv6 pool's prefix that holds its gateway, when the gateway is inside the
 * pool's network (not link-local): that prefix is the provider's link, never a service's.
 */
function gatewayIndex(
  pool: Pick<IpPoolTable, 'network' | 'gateway' | 'assign_prefix_length'>,
): number | undefined {
  const network = parseNetwork(pool.network, 'ipv6');
  const gateway = addressValue(pool.gateway, 'ipv6');
  if (!network || gateway === undefined || !contains(network, gateway)) return undefined;
  return Number((gateway - network.base) >> BigInt(128 - Number(pool.assign_prefix_length ?? 64)));
}

/** A prefix a VM holds: the prefix, its address, the pool's gateway. */
export interface Ipv6Held {
  readonly prefix: string;
  readonly address: string;
  readonly gateway: string;
}

const ipv6HeldBy = prepare({ vmId: slot<string>() }, (db, s) =>
  db
    .selectFrom('ipv6_prefixes as x')
    .innerJoin('ip_pools as p', 'p.id', 'x.pool_id')
    .select(['x.prefix', 'x.address', 'p.gateway'])
    .where('x.vm_id', '=', s.vmId),
);

/** What a VM holds: its IPv4 addresses in allocation order (the first is primary), its IPv6 prefix. */
export interface Holdings {
  readonly ipv4: readonly Allocation[];
  readonly ipv6: Ipv6Held | undefined;
}

/**
 * holdingsOf's statement: the VM's addresses and its prefix (with its pool's gateway) as the rows
 * of one read, IPv4 first, in allocation order (allocationsOf's order).
 */
const holdingsOfVm = prepare({ vmId: slot<string>() }, (db, s) =>
  db
    .selectFrom('ip_addresses as a')
    .select([
      sql.lit('ipv4').as('family'),
      'a.address',
      'a.allocated_at',
      'a.address_num',
      sql<string | null>`cast(null as text)`.as('prefix'),
      sql<string | null>`cast(null as text)`.as('gateway'),
    ])
    .where('a.vm_id', '=', s.vmId)
    .unionAll(
      db
        .selectFrom('ipv6_prefixes as x')
        .innerJoin('ip_pools as p', 'p.id', 'x.pool_id')
        .select([
          sql.lit('ipv6').as('family'),
          'x.address',
          'x.allocated_at',
          sql.lit(0).as('address_num'),
          'x.prefix',
          'p.gateway',
        ])
        .where('x.vm_id', '=', s.vmId),
    )
    .orderBy('family')
    .orderBy('allocated_at')
    .orderBy('address_num'),
);

/**
 * What the VM holds, in one read: allocationsOf's addresses and the prefix takeIpv6Prefix would
 * find (a create asks both before it takes).
 */
export async function holdingsOf(db: Kysely<Database>, vmId: string): Promise<Holdings> {
  const rows = await readTogether(db, holdingsOfVm.compile(db, { vmId }), vmId);
  const ipv4: Allocation[] = [];
  let ipv6: Ipv6Held | undefined;
  for (const r of rows) {
    if (r.family === 'ipv4') ipv4.push(toAllocation(r));
    else if (r.prefix !== null && r.gateway !== null)
      ipv6 = { prefix: r.prefix, address: r.address, gateway: r.gateway };
  }
  return { ipv4, ipv6 };
}

/**
 * Gives the VM a prefix of one of `pools` (IPv6, the host's, in order), or returns the one it
 * holds (takeNewIpv6Prefix when it holds none). Call it in a transaction.
 */
export async function takeIpv6Prefix(
  tx: Kysely<Database>,
  pools: readonly IpPoolTable[],
  vmId: string,
  at: number,
): Promise<Ipv6Held | undefined> {
  return (await ipv6HeldOf(tx, vmId)) ?? takeNewIpv6Prefix(tx, pools, vmId, at);
}

/** The prefix the VM holds, if any. */
export async function ipv6HeldOf(db: Kysely<Database>, vmId: string): Promise<Ipv6Held | undefined> {
  return ipv6HeldBy.first(db, { vmId });
}

/**
 * Gives a VM that holds no prefix one of `pools` (IPv6, the host's, in order): a released prefix
 * first (released longest ago), else the pool's next index. The index's primary key makes
 * concurrent takes safe: of two transactions inserting one index, the second's insert does
 * nothing and it reads the next index again. Undefined when every pool is full (or there is
 * none). Call it in a transaction.
 */
export async function takeNewIpv6Prefix(
  tx: Kysely<Database>,
  pools: readonly IpPoolTable[],
  vmId: string,
  at: number,
): Promise<Ipv6Held | undefined> {
  for (const pool of pools) {
    const network = parseNetwork(pool.network, 'ipv6');
    const length = Number(pool.assign_prefix_length ?? 64);
    if (!network) continue;
    const reused = await tx
      .updateTable('ipv6_prefixes')
      .set({ vm_id: vmId, allocated_at: at })
      .where('pool_id', '=', pool.id)
      .where('vm_id', 'is', null)
      .where(
        'idx',
        '=',
        tx
          .selectFrom('ipv6_prefixes')
          .select('idx')
          .where('pool_id', '=', pool.id)
          .where('vm_id', 'is', null)
          .orderBy('released_at')
          .orderBy('idx')
          .limit(1)
          .$if(dialectOf(tx) === 'postgres', (q) => q.forUpdate().skipLocked()),
      )
      .returning(['prefix', 'address'])
      .executeTakeFirst();
    if (reused) return { ...reused, gateway: pool.gateway };
    const count = prefixCount(network, length);
    const skipped = gatewayIndex(pool);
    for (;;) {
      const top = await tx
        .selectFrom('ipv6_prefixes')
        .select(sql<number | string | null>`max(idx)`.as('top'))
        .where('pool_id', '=', pool.id)
        .executeTakeFirstOrThrow();
      let idx = top.top === null ? 0 : Number(top.top) + 1;
      if (idx === skipped) idx++;
      if (idx >= count) break;
      const { prefix, address } = prefixAt(network, length, idx);
      const made = await tx
        .insertInto('ipv6_prefixes')
        .values({ pool_id: pool.id, idx, prefix, address, vm_id: vmId, allocated_at: at, released_at: 0 })
        .onConflict((oc) => oc.doNothing())
        .returning(['prefix', 'address'])
        .executeTakeFirst();
      if (made) return { ...made, gateway: pool.gateway };
    }
  }
  return undefined;
}

/**
 * Frees the VM's prefix (kept as a row, handed out again later), and forgets the PTR record its
 * service set for its IPv6 address.
 */
export async function releaseIpv6Prefix(tx: Kysely<Database>, vmId: string, now: number): Promise<void> {
  await tx
    .updateTable('ipv6_prefixes')
    .set({ vm_id: null, allocated_at: null, released_at: now })
    .where('vm_id', '=', vmId)
    .execute();
  await tx
    .deleteFrom('service_ptrs')
    .where('service_id', '=', vmId)
    .where('address', 'like', '%:%')
    .execute();
}

/**
 * Gives an existing service a prefix of an IPv6 pool of its host (or returns the one it holds),
 * at the operator's request. 400 `invalid_state` for a service that has no server (terminated,
 * or not created yet); 409 `no_ipv6_pool` when no IPv6 pool serves its host or they are full.
 * The guest applies it when its configuration is next written and read (docs/libvirt.md).
 */
export async function assignServiceIpv6(
  db: Kysely<Database>,
  serviceId: string,
  now: number,
  audit: AuditContext,
): Promise<Ipv6Held> {
  return db.transaction().execute(async (tx) => {
    const service = await tx
      .selectFrom('services')
      .select(['id', 'reseller_id', 'host_id', 'status'])
      .where('id', '=', serviceId)
      .executeTakeFirst();
    if (!service) throw new ApiError('service_not_found', 'Service not found');
    if (service.host_id === null || service.status === 'terminated')
      throw new ApiError('invalid_state', 'The service has no server to give an IPv6 prefix to');
    const pools = (await poolsForHost(tx, service.host_id)).ipv6;
    if (pools.length === 0)
      throw new ApiError('no_ipv6_pool', `No IPv6 pool serves the service's host ${service.host_id}`);
    const held = await takeIpv6Prefix(tx, pools, service.id, now);
    if (!held)
      throw new ApiError('no_ipv6_pool', `The IPv6 pools of host ${service.host_id} have no free prefix`);
    await recordAudit(
      tx,
      audit,
      { target: { type: 'service', id: service.id }, serviceId: service.id, resellerId: service.reseller_id },
      now,
    );
    return held;
  });
}
