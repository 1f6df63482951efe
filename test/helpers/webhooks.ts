/**
 * Webhook receivers for tests: real HTTP servers on 127.0.0.1 that record what they get and
 * answer as the test says, and host lookups that never ask anything outside the machine.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { HostLookup, ResolvedAddress } from '../../src/webhooks/lookup.ts';
import { WAIT_MS } from './budget.ts';

export interface Received {
  /** The request's path and query. */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The parsed body, once its signature was verified with the webhook's secret. */
  verified(secret: string): { type: string; timestamp: string; data: any };
}

/** What a receiver answers: a status, or `hang` (never answers: a dead receiver). */
export type Answer = number | 'hang';

export interface Receiver {
  /** `http://127.0.0.1:PORT/hook` */
  readonly url: string;
  readonly port: number;
  readonly received: Received[];
  /** How the next requests are answered (default 200). */
  answer(fn: (n: number, r: Received) => Answer): void;
  /** Resolves when `n` requests have come (fails after `ms`). */
  waitFor(n: number, ms?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** Verifies a message with the `standardwebhooks` package, as a reseller's receiver would. */
export function verify(secret: string, body: string, headers: IncomingHttpHeaders) {
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (typeof v === 'string') flat[k] = v;
  return new Webhook(secret).verify(body, flat) as { type: string; timestamp: string; data: any };
}

export async function startReceiver(host = '127.0.0.1'): Promise<Receiver> {
  const received: Received[] = [];
  const hanging: ServerResponse[] = [];
  let answer: (n: number, r: Received) => Answer = () => 200;
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const r: Received = {
        url: req.url ?? '',
        headers: req.headers,
        body,
        verified: (secret) => verify(secret, body, req.headers),
      };
      received.push(r);
      server.emit('received');
      const a = answer(received.length, r);
      if (a === 'hang') hanging.push(res);
      else res.writeHead(a).end();
    });
  });
  server.listen(0, host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}/hook`,
    port,
    received,
    answer(fn) {
      answer = fn;
    },
    async waitFor(n, ms = WAIT_MS) {
      if (received.length < n) {
        await new Promise<void>((resolve, reject) => {
          const check = () => {
            if (received.length < n) return;
            clearTimeout(timer);
            server.off('received', check);
            resolve();
          };
          const timer = setTimeout(() => {
            server.off('received', check);
            reject(new Error(`the receiver got ${received.length} requests within ${ms} ms, not ${n}`));
          }, ms);
          server.on('received', check);
        });
      }
      return received.slice(0, n);
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** A receiver that accepts connections and reads requests but never answers, counting its connections. */
export interface HangingEndpoint {
  /** `http://127.0.0.1:PORT` */
  readonly origin: string;
  /** Connections open now. */
  readonly open: number;
  /** The most connections that were open at once. */
  readonly maxOpen: number;
  /** Connections that ended (none does until the sender gives up or the endpoint closes). */
  readonly closed: number;
  /** Requests read in full (each one an attempt waiting for its answer). */
  readonly requests: number;
  close(): Promise<void>;
}

export async function startHangingEndpoint(): Promise<HangingEndpoint> {
  let open = 0;
  let maxOpen = 0;
  let closed = 0;
  let requests = 0;
  const server = createServer((req) => {
    req.resume();
    req.on('end', () => {
      requests++;
    });
  });
  server.on('connection', (socket) => {
    open++;
    maxOpen = Math.max(maxOpen, open);
    socket.on('close', () => {
      open--;
      closed++;
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    get open() {
      return open;
    },
    get maxOpen() {
      return maxOpen;
    },
    get closed() {
      return closed;
    },
    get requests() {
      return requests;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** A lookup that answers from a table (a function may change its answer per call), and else fails as an unknown name. */
export function tableLookup(
  table: Record<string, string | (() => string)>,
): HostLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const entry = table[hostname];
    if (entry === undefined)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    const address = typeof entry === 'function' ? entry() : entry;
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };
  return Object.assign(lookup, { calls });
}

/** The default of test apps: no name resolves, so no test asks a DNS server anything. */
export const offlineLookup: HostLookup = tableLookup({});

/**
 * Every range of IANA's IPv4 and IPv6 special-purpose address registries, multicast and IPv6
 * outside global unicast: its first and last address, and the kind named. The addresses just
 * outside each range (RANGE_NEIGHBOURS) are allowed, unless another range holds them.
 */
export const REFUSED_RANGES: readonly (readonly [first: string, last: string, kind: string])[] = [
  ['0.0.0.0', '0.255.255.255', 'unspecified'],
  ['10.0.0.0', '10.255.255.255', 'private'],
  ['100.64.0.0', '100.127.255.255', 'private (shared address space)'],
  ['127.0.0.0', '127.255.255.255', 'loopback'],
  ['169.254.0.0', '169.254.255.255', 'link-local'],
  ['172.16.0.0', '172.31.255.255', 'private'],
  ['192.0.0.0', '192.0.0.255', 'reserved (IETF protocol assignments)'],
  ['192.0.2.0', '192.0.2.255', 'reserved (documentation)'],
  ['192.31.196.0', '192.31.196.255', 'reserved (AS112)'],
  ['192.52.193.0', '192.52.193.255', 'reserved (AMT)'],
  ['192.88.99.0', '192.88.99.255', 'reserved (6to4 relay anycast)'],
  ['192.168.0.0', '192.168.255.255', 'private'],
  ['192.175.48.0', '192.175.48.255', 'reserved (AS112)'],
  ['198.18.0.0', '198.19.255.255', 'reserved (benchmarking)'],
  ['198.51.100.0', '198.51.100.255', 'reserved (documentation)'],
  ['203.0.113.0', '203.0.113.255', 'reserved (documentation)'],
  ['224.0.0.0', '239.255.255.255', 'multicast'],
  ['240.0.0.0', '255.255.255.254', 'reserved'],
  ['255.255.255.255', '255.255.255.255', 'broadcast'],
  ['::', '::', 'unspecified'],
  ['::1', '::1', 'loopback'],
  ['::2', '::ffff:ffff', 'reserved (IPv4-compatible)'],
  ['64:ff9b::', '64:ff9b::ffff:ffff', 'reserved (IPv4/IPv6 translation)'],
  ['64:ff9b:1::', '64:ff9b:1:ffff:ffff:ffff:ffff:ffff', 'reserved (IPv4/IPv6 translation)'],
  ['100::', '100::ffff:ffff:ffff:ffff', 'reserved (discard)'],
  ['100:0:0:1::', '100::1:ffff:ffff:ffff:ffff', 'reserved (dummy prefix)'],
  ['2001::', '2001:0:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (Teredo)'],
  ['2001:1::', '2001:1:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (IETF protocol assignments)'],
  ['2001:2::', '2001:2:0:ffff:ffff:ffff:ffff:ffff', 'reserved (benchmarking)'],
  ['2001:3::', '2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (IETF protocol assignments)'],
  ['2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (documentation)'],
  ['2002::', '2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (6to4)'],
  ['2620:4f:8000::', '2620:4f:8000:ffff:ffff:ffff:ffff:ffff', 'reserved (AS112)'],
  ['3fff::', '3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (documentation)'],
  ['5f00::', '5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (segment routing)'],
  ['fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'private (unique local)'],
  ['fe80::', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'link-local'],
  ['fec0::', 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'private (site-local)'],
  ['ff00::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'multicast'],
  ['1::', '1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (not global unicast)'],
  ['4000::', '7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (not global unicast)'],
  ['8000::', 'fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved (not global unicast)'],
];

/** Public addresses next to the refused ranges. */
export const RANGE_NEIGHBOURS: readonly string[] = [
  '1.0.0.0',
  '9.255.255.255',
  '11.0.0.0',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '169.255.0.0',
  '172.15.255.255',
  '172.32.0.0',
  '191.255.255.255',
  '192.0.1.0',
  '192.0.3.0',
  '192.31.195.255',
  '192.31.197.0',
  '192.52.192.255',
  '192.52.194.0',
  '192.88.98.255',
  '192.88.100.0',
  '192.167.255.255',
  '192.169.0.0',
  '192.175.47.255',
  '192.175.49.0',
  '198.17.255.255',
  '198.20.0.0',
  '198.51.99.255',
  '198.51.101.0',
  '203.0.112.255',
  '203.0.114.0',
  '223.255.255.255',
  '2000::',
  '2001:200::',
  '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff',
  '2001:db9::',
  '2003::',
  '2620:4f:7fff:ffff:ffff:ffff:ffff:ffff',
  '2620:4f:8001::',
  '3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  '3fff:1000::',
];
