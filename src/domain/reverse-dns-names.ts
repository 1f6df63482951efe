import ipaddr from 'ipaddr.js';
import { ApiError } from './errors.ts';
import { isHostname } from './hostname.ts';

/**
 * Names of reverse DNS (PTR records), all absolute with their final dot as the DNS API wants them:
 * an address's reverse name (`5.2.0.192.in-addr.arpa.`, `1.0.0.0....8.b.d.0.1.0.0.2.ip6.arpa.`)
 * and the reverse zone it lives in. Zones: one in-addr.arpa zone per /24 holding the address
 * (`2.0.192.in-addr.arpa.`); for IPv6 the zone of the address's pool, its network rounded down
 * to a nibble boundary (a /48 pool: the 12-nibble zone; a /50 pool: the /48's).
 */

/** An address as a client may write it: IPv4 in four decimal parts, IPv6 in any RFC 4291 form. */
function parseAddress(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(ip)) return ipaddr.IPv4.parse(ip);
  if (ipaddr.IPv6.isValid(ip) && !ip.includes('%')) return ipaddr.IPv6.parse(ip);
  return undefined;
}

/** The longest an address is written (IPv6 with an IPv4 tail: 45), with room for spaces around it. */
const MAX_ADDRESS_TEXT = 64;

/** The address in one canonical form (IPv6 compressed, RFC 5952), or undefined if `ip` is none. */
export function canonicalAddress(ip: string): string | undefined {
  // A longer text is no address, and is not handed to the parser.
  if (ip.length > MAX_ADDRESS_TEXT) return undefined;
  const parsed = parseAddress(ip.trim());
  if (!parsed) return undefined;
  return parsed instanceof ipaddr.IPv6 ? parsed.toRFC5952String() : parsed.toString();
}

/** The address's 32 nibbles (IPv6) as hex digits, most significant first. */
function nibbles(address: ipaddr.IPv6): string[] {
  return address.parts.flatMap((part) => part.toString(16).padStart(4, '0').split(''));
}

/** The reverse name of an address (the owner of its PTR record). */
export function reverseName(ip: string): string {
  const parsed = parseAddress(ip);
  if (!parsed) throw new Error(`not an IP address: ${ip}`);
  if (parsed instanceof ipaddr.IPv6) return `${nibbles(parsed).toReversed().join('.')}.ip6.arpa.`;
  return `${parsed.octets.toReversed().join('.')}.in-addr.arpa.`;
}

/** The in-addr.arpa zone of an IPv4 address: its /24. */
export function ipv4ReverseZone(ip: string): string {
  const parsed = parseAddress(ip);
  if (!(parsed instanceof ipaddr.IPv4)) throw new Error(`not an IPv4 address: ${ip}`);
  return `${parsed.octets.slice(0, 3).toReversed().join('.')}.in-addr.arpa.`;
}

/** The ip6.arpa zone of an IPv6 pool (`2001:db8:4000::/48`): its network rounded down to a nibble boundary. */
export function ipv6ReverseZone(poolNetwork: string): string {
  const [network, bits] = ipaddr.IPv6.parseCIDR(poolNetwork);
  const count = Math.floor(bits / 4);
  if (count === 0) return 'ip6.arpa.';
  return `${nibbles(network).slice(0, count).toReversed().join('.')}.ip6.arpa.`;
}

/** What `{ip}` of a default pattern becomes: the address with dots or colons as dashes, IPv6 written out in full. */
function addressLabel(ip: string): string {
  const parsed = parseAddress(ip);
  if (!parsed) throw new Error(`not an IP address: ${ip}`);
  const text =
    parsed instanceof ipaddr.IPv6 ? parsed.parts.map((p) => p.toString(16)).join(':') : parsed.toString();
  return text.replace(/[.:]/g, '-');
}

/** The placeholder of a default pattern. */
export const ADDRESS_PLACEHOLDER = '{ip}';

/**
 * The default PTR of an address from the operator's pattern (`ip-{ip}.example.net`): `{ip}` is
 * the address with dots (IPv4) or colons (IPv6, every group written, without `::`) as dashes, so
 * `10.0.0.5` gives `ip-10-0-0-5.example.net` and `2001:db8::1` gives
 * `ip-2001-db8-0-0-0-0-0-1.example.net`. Without a pattern there is no default: undefined.
 */
export function defaultPtr(pattern: string | undefined, ip: string): string | undefined {
  if (pattern === undefined) return undefined;
  return pattern.split(ADDRESS_PLACEHOLDER).join(addressLabel(ip)).toLowerCase();
}

/**
 * A PTR target a client gives, normalised (lower case, no final dot); 400 `invalid_ptr` unless
 * it is a host name by the same rule as an order's `domain_name`. One final dot, as DNS tools
 * write absolute names, is taken off before the check. The one check of a `ptr`, its length
 * included: the request schema takes a string of any length (up to the body limit).
 */
export function checkPtr(value: string): string {
  const name = value.trim().toLowerCase().replace(/\.$/, '');
  if (!isHostname(name))
    throw new ApiError(
      'invalid_ptr',
      'ptr must be a host name (RFC 1123): labels of letters, digits and hyphens, at most 253 characters',
    );
  return name;
}
