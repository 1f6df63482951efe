/**
 * For the SDK's tests: a real server listening on 127.0.0.1 (port 0) and a client of it made
 * with client/src/index.ts, as a reseller's code would make one.
 */
import { type ClientOptions, createClient, type Order, type VrpClient } from '../../client/src/index.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { BASE, type TestApp } from '../helpers/app.ts';

export const product = DEMO_CATALOG.products[0]!;

/** A valid order of the first demo product at its smallest, with some backup space. */
export function smallOrder(domain = 'web1.example.com'): Order {
  return {
    product_id: product.id,
    domain_name: domain,
    template_id: product.os_templates[0]!,
    cpu: Number(product.config.cpu.min),
    ram: Number(product.config.ram.min),
    hdd: Number(product.config.hdd.min),
    ip: Number(product.config.ip.min),
    backup: Math.max(10, Number(product.config.backup.min)),
  };
}

/** `{base_url}` of the app, listening on loopback (once; later calls answer the same). */
export async function baseUrlOf(t: TestApp): Promise<string> {
  const address = t.app.server.listening
    ? `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`
    : await t.app.listen({ host: '127.0.0.1', port: 0 });
  return `${address}${BASE}`;
}

/** A client of a new application of `reseller` on the app, over real HTTP. */
export async function sdkClient(
  t: TestApp,
  options: { reseller?: string } & Partial<ClientOptions> = {},
): Promise<VrpClient> {
  const app = await t.client({ reseller: options.reseller ?? 'acme' });
  return createClient({
    baseUrl: await baseUrlOf(t),
    clientId: app.client_id,
    clientSecret: app.client_secret,
    ...options,
  });
}

/** What a fetch that the client is given saw: each request's method and path, and the status answered. */
export interface Seen {
  readonly requests: { method: string; path: string; status: number }[];
  readonly fetch: typeof fetch;
}

/** The platform's fetch, recording what went over it (it changes nothing). */
export function watchedFetch(): Seen {
  const requests: Seen['requests'] = [];
  return {
    requests,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      const url = new URL(input instanceof Request ? input.url : String(input));
      requests.push({ method: init?.method ?? 'GET', path: url.pathname, status: res.status });
      return res;
    },
  };
}
