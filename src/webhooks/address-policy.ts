import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook may not reach unless the operator allows private receivers: the
 * provider's own networks and machine, and addresses that are nobody's (RFC 6890 special-purpose
 * ranges). IPv6 addresses that carry an IPv4 address are judged by it too: IPv4-mapped
 * (::ffff:a.b.c.d, as Node's BlockList does), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
 */
const REFUSED: readonly (readonly [string, number, 'ipv4' | 'ipv6', string])[] = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'private (shared address space)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.0.2.0', 24, 'ipv4', 'reserved (documentation)'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'reserved (benchmarking)'],
  ['198.51.100.0', 24, 'ipv4', 'reserved (documentation)'],
  ['203.0.113.0', 24, 'ipv4', 'reserved (documentation)'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['::', 96, 'ipv6', 'reserved (IPv4-compatible)'],
  ['100::', 64, 'ipv6', 'reserved (discard)'],
  ['2001:db8::', 32, 'ipv6', 'reserved (documentation)'],
  ['fc00::', 7, 'ipv6', 'private (unique local)'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'private (site-local)'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

const lists = REFUSED.map(([net, prefix, family, kind]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, family);
  return { list, kind };
});

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

const ipv4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/** The IPv4 address a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address carries, if it is one. */
function embeddedIpv4(address: string): string | undefined {
  const g = groups(address);
  const [g0, g1 = 0, g2 = 0, , , , g6 = 0, g7 = 0] = g;
  if (g0 === 0x64 && g1 === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return ipv4Of(g6, g7);
  if (g0 === 0x2002) return ipv4Of(g1, g2);
  return undefined;
}

/**
 * Why a webhook may not reach `address` ("private", "loopback"...), or undefined if it may.
 * Anything that is not an IP address is refused: only resolved addresses are judged.
 */
export function refusedAddressKind(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return 'not an IP address';
  const embedded = family === 6 ? embeddedIpv4(bare) : undefined;
  if (embedded !== undefined) return refusedAddressKind(embedded);
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return lists.find(({ list }) => list.check(bare, type))?.kind;
}
