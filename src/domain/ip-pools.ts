import { ApiError } from './errors.ts';
import {
  addressValue,
  contains,
  formatAddress,
  formatNetwork,
  type IpFamily,
  isLinkLocal,
  lastOf,
  type Network,
  parseNetwork,
} from './ip-math.ts';

/**
 * Address pools as the operator gives them, and the rules a pool must keep
 * (docs/operator-api.md#address-pools). No I/O: what needs the store (another pool overlapping,
 * hosts that exist, addresses in use) is checked by store/repos/ip-pools.ts.
 */

/** A pool's name: 1 to 63 letters, digits, dots, dashes and underscores. */
export const POOL_NAME_PATTERN = '^[A-Za-z0-9._-]{1,63}$';
const POOL_NAME = new RegExp(POOL_NAME_PATTERN);

/** The widest IPv4 pool: its addresses are rows of the store (a /12 is about a million). */
export const MIN_IPV4_PREFIX = 12;
/** The narrowest IPv4 pool: a /30 has two usable addresses. */
export const MAX_IPV4_PREFIX = 30;
/** IPv6 pools span /16 to /64; each service gets a prefix of /64 or wider. */
export const MIN_IPV6_PREFIX = 16;
export const MAX_ASSIGN_PREFIX = 64;
export const DEFAULT_ASSIGN_PREFIX = 64;
/** What an IPv6 pool's guests route through unless the operator says otherwise: on the link. */
export const DEFAULT_IPV6_GATEWAY = 'fe80::1';
/** The most reserved addresses one pool takes. */
export const MAX_RESERVED = 1024;

/** A pool's fields in the domain's words (a new pool, or an existing one with a change applied). */
export interface PoolFields {
  readonly name: string;
  readonly family: string;
  readonly network: string;
  readonly gateway?: string | undefined;
  readonly first?: string | undefined;
  readonly last?: string | undefined;
  readonly reserved?: readonly string[] | undefined;
  readonly assignPrefixLength?: number | undefined;
}

/** A checked pool, in canonical forms: what the store keeps. */
export interface PoolSpec {
  readonly name: string;
  readonly family: IpFamily;
  readonly network: string;
  readonly gateway: string;
  /** IPv4 only: the part of the network handed out. */
  readonly first: string | null;
  readonly last: string | null;
  readonly reserved: readonly string[];
  /** IPv6 only: the prefix length each service gets. */
  readonly assignPrefixLength: number | null;
}

const shown = (s: string) => JSON.stringify(s.slice(0, 100));

/** 400 `validation_failed` unless `name` is a pool name. */
export function checkPoolName(name: string): void {
  if (!POOL_NAME.test(name))
    throw new ApiError(
      'validation_failed',
      `The pool name ${shown(name)} is not 1 to 63 letters, digits, dots, dashes or underscores`,
    );
}

function networkOf(family: IpFamily, cidr: string): Network {
  const n = parseNetwork(cidr, family);
  const [min, max] =
    family === 'ipv4' ? [MIN_IPV4_PREFIX, MAX_IPV4_PREFIX] : [MIN_IPV6_PREFIX, MAX_ASSIGN_PREFIX];
  if (!n || n.bits < min || n.bits > max)
    throw new ApiError(
      'invalid_network',
      `network ${shown(cidr)} is not an ${family === 'ipv4' ? 'IPv4' : 'IPv6'} network in CIDR form from /${min} to /${max}, with no host bits set`,
    );
  return n;
}

/** An IPv4 address of the network other than its network and broadcast addresses; else 400 `code`. */
function hostAddress(
  n: Network,
  field: string,
  value: string,
  code: 'gateway_outside_network' | 'range_outside_network',
): bigint {
  const v = addressValue(value, 'ipv4');
  if (v === undefined)
    throw new ApiError('validation_failed', `${field} ${shown(value)} is not an IPv4 address`);
  if (!contains(n, v) || v === n.base || v === lastOf(n))
    throw new ApiError(
      code,
      `${field} ${value} is not a host address of the pool's network ${formatNetwork(n)}`,
    );
  return v;
}

function checkIpv4(p: PoolFields): PoolSpec {
  const n = networkOf('ipv4', p.network);
  if (p.assignPrefixLength !== undefined)
    throw new ApiError('validation_failed', 'assign_prefix_length is for IPv6 pools only');
  const gateway = hostAddress(
    n,
    'gateway',
    p.gateway ?? formatAddress(n.base + 1n, 'ipv4'),
    'gateway_outside_network',
  );
  const first = hostAddress(
    n,
    'first',
    p.first ?? formatAddress(n.base + 1n, 'ipv4'),
    'range_outside_network',
  );
  const last = hostAddress(
    n,
    'last',
    p.last ?? formatAddress(lastOf(n) - 1n, 'ipv4'),
    'range_outside_network',
  );
  if (first > last)
    throw new ApiError(
      'range_outside_network',
      `first ${formatAddress(first, 'ipv4')} comes after last ${formatAddress(last, 'ipv4')}`,
    );
  const reserved = new Set<bigint>();
  for (const r of p.reserved ?? [])
    reserved.add(hostAddress(n, 'reserved address', r, 'range_outside_network'));
  if (reserved.size > MAX_RESERVED)
    throw new ApiError('validation_failed', `A pool takes at most ${MAX_RESERVED} reserved addresses`);
  return {
    name: p.name,
    family: 'ipv4',
    network: formatNetwork(n),
    gateway: formatAddress(gateway, 'ipv4'),
    first: formatAddress(first, 'ipv4'),
    last: formatAddress(last, 'ipv4'),
    reserved: [...reserved].sort((a, b) => (a < b ? -1 : 1)).map((v) => formatAddress(v, 'ipv4')),
    assignPrefixLength: null,
  };
}

function checkIpv6(p: PoolFields): PoolSpec {
  const n = networkOf('ipv6', p.network);
  for (const [field, given] of [
    ['first', p.first],
    ['last', p.last],
  ] as const)
    if (given !== undefined) throw new ApiError('validation_failed', `${field} is for IPv4 pools only`);
  if (p.reserved !== undefined && p.reserved.length > 0)
    throw new ApiError('validation_failed', 'reserved is for IPv4 pools only');
  const assign = p.assignPrefixLength ?? DEFAULT_ASSIGN_PREFIX;
  if (!Number.isSafeInteger(assign) || assign < n.bits || assign > MAX_ASSIGN_PREFIX)
    throw new ApiError(
      'prefix_too_small',
      `assign_prefix_length ${String(assign)} does not fit: each service's prefix must be inside the pool's /${n.bits} and /${MAX_ASSIGN_PREFIX} or wider, so from ${n.bits} to ${MAX_ASSIGN_PREFIX}`,
    );
  const given = p.gateway ?? DEFAULT_IPV6_GATEWAY;
  const gateway = addressValue(given, 'ipv6');
  if (gateway === undefined)
    throw new ApiError('validation_failed', `gateway ${shown(given)} is not an IPv6 address`);
  if (!isLinkLocal(gateway) && !contains(n, gateway))
    throw new ApiError(
      'gateway_outside_network',
      `gateway ${given} is neither link-local (fe80::/10) nor inside the pool's network ${formatNetwork(n)}`,
    );
  return {
    name: p.name,
    family: 'ipv6',
    network: formatNetwork(n),
    gateway: formatAddress(gateway, 'ipv6'),
    first: null,
    last: null,
    reserved: [],
    assignPrefixLength: assign,
  };
}

/**
 * The pool in canonical forms, or 400: `validation_failed` (name, family, fields of the other
 * family, not an address), `invalid_network`, `gateway_outside_network`, `range_outside_network`
 * (first, last or a reserved address outside the network, or first after last),
 * `prefix_too_small` (an IPv6 pool narrower than the prefix each service gets, or a per-service
 * prefix narrower than /64).
 */
export function checkPool(p: PoolFields): PoolSpec {
  checkPoolName(p.name);
  if (p.family === 'ipv4') return checkIpv4(p);
  if (p.family === 'ipv6') return checkIpv6(p);
  throw new ApiError('validation_failed', `family must be ipv4 or ipv6, got ${shown(p.family)}`);
}

/** The IPv4 addresses a pool hands out: first to last, without the gateway and the reserved ones. */
export function ipv4Handout(spec: Pick<PoolSpec, 'first' | 'last' | 'gateway' | 'reserved'>): {
  first: number;
  last: number;
  excluded: number[];
} {
  const num = (a: string | null) => Number(addressValue(a ?? '', 'ipv4') ?? 0n);
  const first = num(spec.first);
  const last = num(spec.last);
  const excluded = [...new Set([spec.gateway, ...spec.reserved].map(num))].filter(
    (v) => v >= first && v <= last,
  );
  return { first, last, excluded };
}
