import { lookup as dnsLookup } from 'node:dns/promises';

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/**
 * Resolves a host name to its addresses: the system resolver in production; tests give their
 * own, so that no name is ever looked up outside the machine.
 */
export type HostLookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** The system's resolver (getaddrinfo: /etc/hosts, then DNS), every address in its order. */
export const systemLookup: HostLookup = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, order: 'verbatim' });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};
