/** Set-up shared by the end-to-end tests that drive real server processes over HTTP. */
import assert from 'node:assert/strict';
import {
  ensureReseller,
  type RegisteredApplication,
  registerApplication,
} from '../../src/auth/applications.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import { seedDemoCatalog } from '../../src/store/demo-catalog.ts';
import { committedDocumentChecker } from './response-check.ts';

export const API = '/vps_reseller_provider/public/api/v2';

/** A store (SQLite in `dataDir`, or PostgreSQL) with the demo catalogue and one application of reseller `acme`. */
export async function prepareStore(
  dataDir: string,
  databaseUrl?: string,
): Promise<{ store: Store; app: RegisteredApplication }> {
  const store = await openStore({ databaseUrl, dataDir });
  await seedDemoCatalog(store.db, Date.now());
  await ensureReseller(store.db, 'acme', Date.now());
  const app = await registerApplication(store.db, { reseller: 'acme' }, Date.now());
  return { store, app };
}

/** `fetch`, with the answer held to docs/openapi.json (response-check.ts); the body comes back as text. */
async function checkedFetch(url: string, init: RequestInit): Promise<{ status: number; text: string }> {
  const res = await fetch(url, init);
  const text = await res.text();
  const { pathname, search } = new URL(url);
  committedDocumentChecker().assert({
    method: init.method ?? 'GET',
    url: `${pathname}${search}`,
    status: res.status,
    contentType: res.headers.get('content-type') ?? undefined,
    body: text,
  });
  return { status: res.status, text };
}

export async function fetchToken(
  baseUrl: string,
  app: Pick<RegisteredApplication, 'client_id' | 'client_secret'>,
): Promise<string> {
  const res = await checkedFetch(`${baseUrl}/vps_reseller_provider/public/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'client_credentials',
      client_id: app.client_id,
      client_secret: app.client_secret,
    }),
  });
  assert.equal(res.status, 200);
  return (JSON.parse(res.text) as { access_token: string }).access_token;
}

/** API calls with a bearer token; `ok` asserts 200 and returns `data`. */
export function apiClient(baseUrl: () => string, token: string) {
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const res = await checkedFetch(`${baseUrl()}${API}/${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: method === 'GET' ? undefined : body === undefined ? '' : JSON.stringify(body),
    });
    return { status: res.status, body: JSON.parse(res.text) as any };
  };
  const ok = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const r = await call(method, path, body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.data;
  };
  return {
    call,
    ok,
    /**
     * Polls the service's status until it is `wanted` with no job left, before `deadline`
     * (ms since the epoch); a `failed` service fails the test at once, with its jobs.
     */
    async settled(id: string, wanted: string, deadline: number, everyMs = 200): Promise<void> {
      let status: { status: string; job: unknown } | undefined;
      while (Date.now() < deadline) {
        status = await ok('GET', `service/${id}/status`);
        if (status!.status === wanted && status!.job === null) return;
        assert.notEqual(status!.status, 'failed', JSON.stringify(await ok('GET', `service/${id}/jobs`)));
        await new Promise((r) => setTimeout(r, everyMs));
      }
      assert.fail(`service ${id} is not ${wanted} in time; last: ${JSON.stringify(status)}`);
    },
  };
}

/** An order body for the demo catalogue's first product at its smallest amounts. */
export function smallOrder(domain: string, backup = 10) {
  return {
    product_id: '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01',
    domain_name: domain,
    template_id: '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01',
    cpu: 1,
    ram: 1,
    hdd: 20,
    ip: 1,
    backup,
  };
}
