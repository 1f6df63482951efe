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

/**
 * At most this many of the system resolver's look-ups at once. getaddrinfo blocks one of libuv's
 * four threads until the name's servers answer or the resolver gives up (tens of seconds for
 * servers that never answer); the others run scrypt (token issue, secret checks) and the file
 * system's calls. A reseller's webhooks on names whose servers never answer must not hold them
 * all: they wait here, in turn, and the rest of the process keeps two threads.
 */
export const MAX_SYSTEM_LOOKUPS = 2;

/** `lookup`, with at most `max` look-ups under way; the others wait their turn, in order. */
export function limitLookups(lookup: HostLookup, max: number): HostLookup {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (hostname) => {
    if (running >= max) await new Promise<void>((turn) => waiting.push(turn));
    else running++;
    try {
      return await lookup(hostname);
    } finally {
      // The slot goes to the next waiter as it is (running unchanged), or is given back.
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/** The system's resolver (getaddrinfo: /etc/hosts, then DNS), every address in its order. */
export const systemLookup: HostLookup = limitLookups(async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, order: 'verbatim' });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}, MAX_SYSTEM_LOOKUPS);
