/**
 * Test harness: each test gets its own data dir (a fresh SQLite file) and app, and closes them.
 * Real store, real HTTP framework; `app.inject()` for speed, `listen()` where a socket matters.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import {
  ensureReseller,
  type RegisteredApplication,
  registerApplication,
} from '../../src/auth/applications.ts';
import { findClientCredential, loadAnyClientState } from '../../src/auth/client-lookup.ts';
import { createClientStateCache } from '../../src/auth/client-state.ts';
import type { SecretCost } from '../../src/auth/secret-hash.ts';
import { loadConfig } from '../../src/config.ts';
import { type AppContext, createContext } from '../../src/context.ts';
import type { Clock } from '../../src/domain/clock.ts';
import type { Scope } from '../../src/domain/scopes.ts';
import type { HypervisorDriver } from '../../src/drivers/driver.ts';
import { type App, buildApp } from '../../src/http/app.ts';
import { type Background, startBackground } from '../../src/jobs/background.ts';
import { openStore } from '../../src/store/database.ts';
import { seedDemoCatalog } from '../../src/store/demo-catalog.ts';
import type { Variant } from '../../src/store/repos/clients.ts';
import type { HostLookup } from '../../src/webhooks/lookup.ts';
import { WAIT_MS } from './budget.ts';
import { smallOrder } from './e2e.ts';
import { checkResponses } from './response-check.ts';
import { TEST_PASSWORD_COST, TEST_SECRET_COST } from './secret-cost.ts';
import { createPgDatabase, type StoreKind } from './stores.ts';
import { offlineLookup } from './webhooks.ts';

export const BASE = '/vps_reseller_provider/public';
export const API = `${BASE}/api/v2`;

export interface TestApp {
  readonly app: App;
  readonly ctx: AppContext;
  readonly dataDir: string;
  /** The hypervisor driver (the simulated one unless the env says otherwise), with `{ worker: true }`. */
  readonly driver: HypervisorDriver | undefined;
  /** The worker, when started with `{ worker: true }`. */
  readonly background: Background | undefined;
  /** Registers an application for `reseller` (created if missing). */
  client(options?: {
    reseller?: string;
    scopes?: Scope[];
    variant?: Variant;
    /** The app's (ctx.secretCost) unless given. */
    secretCost?: SecretCost;
  }): Promise<RegisteredApplication>;
  /** A bearer token for a new application (or the given one). */
  token(options?: {
    reseller?: string;
    scopes?: Scope[];
    variant?: Variant;
    client?: RegisteredApplication;
  }): Promise<string>;
  close(): Promise<void>;
}

let migrated: Promise<string> | undefined;

/**
 * A SQLite store file with every migration applied, made once per process by the real
 * migrations and copied into each test app's data dir: opening a fresh store and migrating it
 * costs ~25 ms, a copy ~2 ms, and test apps are built by the hundred. (The migrations' own tests
 * open stores of their own.)
 */
function migratedSqlite(): Promise<string> {
  migrated ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vrp-test-migrated-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    await (await openStore({ databaseUrl: undefined, dataDir: dir })).close();
    return join(dir, 'vrp.sqlite');
  })();
  return migrated;
}

/**
 * Settings for tests: instant simulated hypervisor with a /24 address pool, no rate limit, silent
 * logs, demo catalogue. The pool: a fresh store fills the default /16 (65,534 rows) in ~80 ms of
 * CPU, and tests make stores by the hundred (test/config.test.ts checks the default itself).
 */
export function testEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    VRP_DATA_DIR: dataDir,
    VRP_LOG_LEVEL: 'silent',
    VRP_SIMULATED_SPEED: '0',
    VRP_SIM_IP_POOL: '10.80.0.0/24',
    VRP_RATE_LIMIT: '0',
    ...extra,
  };
}

export async function createTestApp(
  env: Record<string, string> = {},
  options: {
    demo?: boolean;
    worker?: boolean;
    store?: StoreKind;
    clock?: Clock;
    /** Resolves webhook hosts (default: no name resolves; no test asks a DNS server anything). */
    lookup?: HostLookup;
    /** The scrypt cost of its applications and of the token endpoint's dummy hash (TEST_SECRET_COST). */
    secretCost?: SecretCost;
    /**
     * How long the app trusts what it read of a client (CLIENT_STATE_TTL_MS, 2 s, unless given):
     * how long a test waits for a change made behind the app's back (the CLI's) to reach requests.
     */
    clientStateTtlMs?: number;
    /**
     * The clock the client-state cache reads (real time unless given): a test that steps it
     * past the TTL sees a change made behind the app's back reach requests without waiting.
     */
    clientStateClock?: Clock;
    /** Where the app and its worker log, at trace level (silent without it). */
    log?: Writable;
  } = {},
): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-test-'));
  const pgDb = options.store === 'postgres' ? await createPgDatabase() : undefined;
  const config = loadConfig(testEnv(dataDir, pgDb ? { ...env, VRP_DATABASE_URL: pgDb.url } : env));
  // A fresh store of our own (not one a test names in its settings) starts migrated.
  if (!config.databaseUrl && config.dataDir === dataDir)
    copyFileSync(await migratedSqlite(), join(dataDir, 'vrp.sqlite'));
  const created = await createContext(config);
  // A test's own clock replaces the one the settings describe, for everything that reads ctx.clock;
  // its secret cost replaces SECRET_COST (test/helpers/secret-cost.ts); its client-state TTL, if
  // given, the 2 s one, and its client-state clock, if given, the real time the cache is asked at.
  const ctx: AppContext = {
    ...created,
    clock: options.clock ?? created.clock,
    lookup: options.lookup ?? offlineLookup,
    secretCost: options.secretCost ?? TEST_SECRET_COST,
    passwordCost: TEST_PASSWORD_COST,
    ...((options.clientStateTtlMs !== undefined || options.clientStateClock) && {
      clientStates: clientStateCache(created, options.clientStateTtlMs, options.clientStateClock),
    }),
  };
  if (options.demo !== false) await seedDemoCatalog(ctx.store.db, Date.now());
  // Loaded only when needed, so tests of the API alone do not depend on a driver. With a worker,
  // the app bridges a service's console in the browser to the same driver, as main.ts does.
  const driver = options.worker
    ? await (await import('../../src/drivers/create-driver.ts')).createDriver(config, ctx.store.db)
    : undefined;
  const app = buildApp(ctx, {
    logger: options.log ? { level: 'trace', stream: options.log } : false,
    ...(driver && { consoles: driver }),
  });
  // Every answer a test sees must be one docs/openapi.json gives (response-check.ts).
  const responses = checkResponses(app);
  await app.ready();
  const background = driver ? startBackground(ctx, driver, app.log, { pollMs: 50 }) : undefined;
  const t: TestApp = {
    app,
    ctx,
    dataDir,
    driver,
    background,
    async client(o = {}) {
      await ensureReseller(ctx.store.db, o.reseller ?? 'acme', Date.now());
      return registerApplication(
        ctx.store.db,
        {
          reseller: o.reseller ?? 'acme',
          scopes: o.scopes,
          variant: o.variant,
          secretCost: o.secretCost ?? ctx.secretCost,
        },
        Date.now(),
      );
    },
    async token(o = {}) {
      const c = o.client ?? (await t.client(o));
      const res = await app.inject({
        method: 'POST',
        url: `${BASE}/oauth/token`,
        payload: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
      });
      if (res.statusCode !== 200) throw new Error(`token request failed: ${res.statusCode} ${res.body}`);
      return res.json().access_token as string;
    },
    async close() {
      await background?.stop(5000);
      await driver?.close();
      await app.close();
      await ctx.store.close();
      await pgDb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
      const problems = responses.problems();
      if (problems.length > 0)
        throw new Error(`answers on sockets that docs/openapi.json does not give:\n${problems.join('\n')}`);
    },
  };
  return t;
}

function clientStateCache(ctx: AppContext, ttlMs: number | undefined, clock: Clock | undefined) {
  const cache = createClientStateCache(
    {
      state: (id) => loadAnyClientState(ctx.store.db, id),
      credential: (id) => findClientCredential(ctx.store.db, id),
    },
    ttlMs,
  );
  if (!clock) return cache;
  return {
    get: (clientId: string) => cache.get(clientId, clock.now()),
    credential: (clientId: string, _now: number, fresh?: boolean) =>
      cache.credential(clientId, clock.now(), fresh),
    invalidate: (clientId: string) => cache.invalidate(clientId),
  };
}

/** An API call through the app, with the token, as JSON; returns status, headers and parsed body. */
export async function call(
  t: TestApp,
  token: string,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Record<string, unknown> }> {
  const res = await t.app.inject({
    method,
    url: path.startsWith('/') ? path : `${API}/${path}`,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

/** Orders a small service for the token's reseller and asks for its creation; its id once the create is queued. */
export async function orderCreating(t: TestApp, token: string, domain: string): Promise<string> {
  const res = await call(t, token, 'POST', 'service/create-order', smallOrder(domain));
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const id = res.body.data[0].service_id as string;
  assert.equal((await call(t, token, 'POST', `service/${id}/create`)).status, 200);
  return id;
}

/** Orders a small service for the token's reseller and creates it; its id once it runs. */
export async function orderRunning(t: TestApp, token: string, domain: string): Promise<string> {
  const id = await orderCreating(t, token, domain);
  await waitForStatus(t, token, id, 'running');
  return id;
}

/** Polls status until `predicate` holds for the service's status (within the wait budget, test/helpers/budget.ts). */
export async function waitForStatus(
  t: TestApp,
  token: string,
  serviceId: string,
  want: string | ((status: string, data: any) => boolean),
  timeoutMs = WAIT_MS,
): Promise<any> {
  const until = Date.now() + timeoutMs;
  // A status name means: reached, with no job left to run.
  const ok = typeof want === 'string' ? (s: string, d: any) => s === want && d.job === null : want;
  let last: any;
  while (Date.now() < until) {
    const res = await call(t, token, 'GET', `service/${serviceId}/status`, undefined, {
      'x-envelope-variant': 'B',
    });
    last = res.body.data;
    if (res.status === 200 && ok(last.status, last)) return last;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`service ${serviceId} did not reach the wanted status; last: ${JSON.stringify(last)}`);
}
