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
