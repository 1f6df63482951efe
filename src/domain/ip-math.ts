import ipaddr from 'ipaddr.js';

/**
 * Address arithmetic of the provider's pools: IPv4 addresses as numbers (what `ip_addresses`
 * stores), IPv6 addresses as bigints, networks in CIDR form. Parsing and formatting go through
 * ipaddr.js; the rest is plain arithmetic. No I/O.
 */

export type IpFamily = 'ipv4' | 'ipv6';

/** A parsed network: its first address as a number, its prefix length and family. */
export interface Network {
  readonly family: IpFamily;
  /** The network's first address (host bits zero). */
  readonly base: bigint;
  readonly bits: number;
  /** How many addresses it spans. */
  readonly size: bigint;
}

const widthOf = (family: IpFamily) => (family === 'ipv4' ? 32 : 128);

/** The family of a textual address, or undefined if it is not one (IPv4 only as four decimal parts). */
export function familyOf(address: string): IpFamily | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(address)) return 'ipv4';
  if (!address.includes('.') && ipaddr.IPv6.isValid(address) && !address.includes('%')) return 'ipv6';
  return undefined;
}

/** The address as a number; undefined if it is not an address of `family`. */
export function addressValue(address: string, family: IpFamily): bigint | undefined {
  if (familyOf(address) !== family) return undefined;
  let n = 0n;
  for (const b of ipaddr.parse(address).toByteArray()) n = (n << 8n) | BigInt(b);
  return n;
}

/** The textual form of an address number: dotted IPv4, compressed IPv6 (RFC 5952). */
export function formatAddress(value: bigint, family: IpFamily): string {
  const bytes: number[] = [];
  for (let i = widthOf(family) / 8 - 1; i >= 0; i--) bytes.push(Number((value >> BigInt(i * 8)) & 255n));
  const ip = ipaddr.fromByteArray(bytes);
  return ip instanceof ipaddr.IPv6 ? ip.toRFC5952String() : ip.toString();
}

/**
 * A network in CIDR form (`192.0.2.0/24`, `2001:db8::/48`) of `family`; undefined if it is not
 * one or has host bits set (`192.0.2.5/24` names an address, not a network).
 */
export function parseNetwork(cidr: string, family: IpFamily): Network | undefined {
  const slash = cidr.indexOf('/');
  if (slash < 0 || !/^\d{1,3}$/.test(cidr.slice(slash + 1))) return undefined;
  const base = addressValue(cidr.slice(0, slash), family);
  const bits = Number(cidr.slice(slash + 1));
  const width = widthOf(family);
  if (base === undefined || bits > width) return undefined;
  const size = 1n << BigInt(width - bits);
  if (base % size !== 0n) return undefined;
  return { family, base, bits, size };
}

/** The network's canonical CIDR text. */
export function formatNetwork(n: Network): string {
  return `${formatAddress(n.base, n.family)}/${n.bits}`;
}

/** Whether `value` is inside the network. */
export function contains(n: Network, value: bigint): boolean {
  return value >= n.base && value < n.base + n.size;
}

/** Whether two networks of one family share an address. */
export function overlaps(a: Network, b: Network): boolean {
  return a.family === b.family && a.base < b.base + b.size && b.base < a.base + a.size;
}

/** The network's last address (IPv4: its broadcast address). */
export function lastOf(n: Network): bigint {
  return n.base + n.size - 1n;
}

/** Whether an IPv6 address is link-local (fe80::/10), a gateway reached on the link. */
export function isLinkLocal(value: bigint): boolean {
  return value >> 118n === 0x3fan;
}

/**
 * The `index`-th prefix of `length` bits inside the network, and the service's address in it:
 * the prefix's first address after the subnet-router anycast one (`...::1`).
 */
export function prefixAt(n: Network, length: number, index: number): { prefix: string; address: string } {
  const size = 1n << BigInt(widthOf(n.family) - length);
  const base = n.base + BigInt(index) * size;
  return {
    prefix: `${formatAddress(base, n.family)}/${length}`,
    address: formatAddress(base + 1n, n.family),
  };
}

/** How many prefixes of `length` bits the network holds. */
export function prefixCount(n: Network, length: number): number {
  return Number(1n << BigInt(length - n.bits));
}
