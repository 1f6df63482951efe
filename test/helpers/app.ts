/**
 * Test harness: each test gets its own data dir (a fresh SQLite file) and app, and closes them.
 * Real store, real HTTP framework; `app.inject()` for speed, `listen()` where a socket matters.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ensureReseller,
  type RegisteredApplication,
  registerApplication,
} from '../../src/auth/applications.ts';
import type { Scope } from '../../src/auth/scopes.ts';
import { loadConfig } from '../../src/config.ts';
import { type AppContext, createContext } from '../../src/context.ts';
import { type App, buildApp } from '../../src/http/app.ts';
import { seedDemoCatalog } from '../../src/store/demo-catalog.ts';
import type { Variant } from '../../src/store/repos/clients.ts';

export const BASE = '/vps_reseller_provider/public';
export const API = `${BASE}/api/v2`;

export interface TestApp {
  readonly app: App;
  readonly ctx: AppContext;
  readonly dataDir: string;
  /** Registers an application for `reseller` (created if missing). */
  client(options?: {
    reseller?: string;
    scopes?: Scope[];
    variant?: Variant;
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

/** Settings for tests: instant simulated hypervisor, no rate limit, silent logs, demo catalogue. */
export function testEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    VRP_DATA_DIR: dataDir,
    VRP_LOG_LEVEL: 'silent',
    VRP_SIMULATED_SPEED: '0',
    VRP_RATE_LIMIT: '0',
    ...extra,
  };
}

export async function createTestApp(
  env: Record<string, string> = {},
  options: { demo?: boolean } = {},
): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-test-'));
  const config = loadConfig(testEnv(dataDir, env));
  const ctx = await createContext(config);
  if (options.demo !== false) await seedDemoCatalog(ctx.store.db, Date.now());
  const app = buildApp(ctx, { logger: false });
  await app.ready();
  const t: TestApp = {
    app,
    ctx,
    dataDir,
    async client(o = {}) {
      await ensureReseller(ctx.store.db, o.reseller ?? 'acme', Date.now());
      return registerApplication(
        ctx.store.db,
        { reseller: o.reseller ?? 'acme', scopes: o.scopes, variant: o.variant },
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
      await app.close();
      await ctx.store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return t;
}
