import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook may not reach unless the operator allows private receivers: every range of
 * IANA's IPv4 and IPv6 special-purpose address registries (the provider's own networks and
 * machine, and addresses that are nobody's or not one receiver's, however "globally reachable"
 * the registry calls some of them), multicast, and IPv6 outside global unicast (2000::/3). The
 * one table: registration and every delivery judge addresses by it. Most specific first, so an
 * address gets the name of the narrowest range that holds it.
 */
const REFUSED: readonly (readonly [network: string, prefix: number, kind: string])[] = [
  // IPv4 (IANA IPv4 Special-Purpose Address Registry, and multicast).
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private (shared address space)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved (IETF protocol assignments)'],
  ['192.0.2.0', 24, 'reserved (documentation)'],
  ['192.31.196.0', 24, 'reserved (AS112)'],
  ['192.52.193.0', 24, 'reserved (AMT)'],
  ['192.88.99.0', 24, 'reserved (6to4 relay anycast)'],
  ['192.168.0.0', 16, 'private'],
  ['192.175.48.0', 24, 'reserved (AS112)'],
  ['198.18.0.0', 15, 'reserved (benchmarking)'],
  ['198.51.100.0', 24, 'reserved (documentation)'],
  ['203.0.113.0', 24, 'reserved (documentation)'],
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'broadcast'],
  ['240.0.0.0', 4, 'reserved'],
  // IPv6 (IANA IPv6 Special-Purpose Address Registry, multicast, and what is not global
  // unicast). ::ffff:0:0/96 is not here: an IPv4-mapped address is judged by its IPv4 address.
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'reserved (IPv4-compatible)'],
  ['64:ff9b::', 96, 'reserved (IPv4/IPv6 translation)'],
  ['64:ff9b:1::', 48, 'reserved (IPv4/IPv6 translation)'],
  ['100::', 64, 'reserved (discard)'],
  ['100:0:0:1::', 64, 'reserved (dummy prefix)'],
  ['2001::', 32, 'reserved (Teredo)'],
  ['2001:2::', 48, 'reserved (benchmarking)'],
  ['2001::', 23, 'reserved (IETF protocol assignments)'],
  ['2001:db8::', 32, 'reserved (documentation)'],
  ['2002::', 16, 'reserved (6to4)'],
  ['2620:4f:8000::', 48, 'reserved (AS112)'],
  ['3fff::', 20, 'reserved (documentation)'],
  ['5f00::', 16, 'reserved (segment routing)'],
  ['fc00::', 7, 'private (unique local)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'private (site-local)'],
  ['ff00::', 8, 'multicast'],
  ['::', 3, 'reserved (not global unicast)'],
  ['4000::', 2, 'reserved (not global unicast)'],
  ['8000::', 1, 'reserved (not global unicast)'],
];

// One list per range and family: Node's BlockList also matches an IPv4 address against IPv6
// ranges (as ::ffff:a.b.c.d), which the IPv6 ranges here are not about.
const lists = REFUSED.map(([network, prefix, kind]) => {
  const type = isIP(network) === 6 ? 'ipv6' : 'ipv4';
  const list = new BlockList();
  list.addSubnet(network, prefix, type);
  return { list, kind, type };
});

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:0:0/96) carries, if it is one. */
function mappedIpv4(address: string): string | undefined {
  const g = groups(address);
  if (g.slice(0, 5).some((x) => x !== 0) || g[5] !== 0xffff) return undefined;
  const [, , , , , , hi = 0, lo = 0] = g;
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** The eight 16-bit groups of an IPv6 address (a valid one, as isIP said). */
function groups(address: string): number[] {
  let text = address;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a = 0, b = 0, c = 0, d = 0] = v4.slice(1).map(Number);
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const part = (s: string | undefined) => (s ? s.split(':').map((h) => Number.parseInt(h, 16)) : []);
  const left = part(head);
  const right = part(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * Why a webhook may not reach `address` ("private", "loopback"...), or undefined if it may.
 * Anything that is not an IP address is refused: only resolved addresses are judged.
 */
export function refusedAddressKind(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return 'not an IP address';
  const mapped = family === 6 ? mappedIpv4(bare) : undefined;
  if (mapped !== undefined) return refusedAddressKind(mapped);
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return lists.find((l) => l.type === type && l.list.check(bare, type))?.kind;
}

/** The ports a webhook may use unless the operator allows private receivers: the web's, and no system service's. */
export function refusedPort(port: number): boolean {
  return !(port === 80 || port === 443 || (port >= 1024 && port <= 65535));
}
