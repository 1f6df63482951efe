import type { FastifyRequest } from 'fastify';
import ipaddr from 'ipaddr.js';

/**
 * Whether an address is loopback: 127.0.0.0/8, ::1, or 127.0.0.0/8 as an IPv4-mapped IPv6
 * address (what a dual-stack socket reports for an IPv4 peer).
 */
export function isLoopback(address: string): boolean {
  return ipaddr.isValid(address) && ipaddr.process(address).range() === 'loopback';
}

/**
 * Whether a request must be refused by a place that takes secrets in its body (the token
 * endpoint, the console's login): it came over plain http from outside loopback, and
 * VRP_ALLOW_HTTP does not allow that. Plain http: the connection is not TLS and, when its peer is
 * a proxy VRP_TRUST_PROXY lists, that proxy's X-Forwarded-Proto is not `https` (Fastify's
 * request.protocol, which believes the header from a trusted proxy only). Outside loopback:
 * request.ip (the connection's address, or a trusted proxy's X-Forwarded-For) is not loopback,
 * so a proxy on the same host that forwards without X-Forwarded-Proto is refused too.
 */
export function plainHttpRefused(request: FastifyRequest, allowHttp: boolean): boolean {
  return !allowHttp && request.protocol !== 'https' && !isLoopback(request.ip);
}

/** What the refusal says, to a program (the token endpoint) and to a person (the console). */
export const HTTPS_REQUIRED =
  'This server takes credentials over https only: use its https:// address (behind a TLS proxy, the proxy must send X-Forwarded-Proto: https and be listed in VRP_TRUST_PROXY)';
