/**
 * Screenshots of the operator console's main pages for docs/console.md, taken again whenever the
 * pages change: `npm run console:screenshots` (Debian's chromium, or VRP_TEST_CHROMIUM).
 *
 * It runs a throwaway server on loopback with the simulated hypervisor and the demo catalogue,
 * orders a few servers as two resellers would, makes one job fail (an order no host has room
 * for), logs in as an operator and photographs each page into docs/console/. Nothing leaves the
 * machine: the browser resolves no name but loopback ones.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { ensureReseller, registerApplication } from '../src/auth/applications.ts';
import { createOperator } from '../src/auth/operators.ts';
import { loadConfig } from '../src/config.ts';
import { createContext } from '../src/context.ts';
import { createDriver } from '../src/drivers/create-driver.ts';
import { buildApp } from '../src/http/app.ts';
import { API, BASE, CONSOLE } from '../src/http/base-path.ts';
import { startBackground } from '../src/jobs/background.ts';
import { seedDemoCatalog } from '../src/store/demo-catalog.ts';
import { TOOLS } from './test-tools.ts';

const OUT = new URL('../docs/console/', import.meta.url).pathname;
const PASSWORD = 'screenshots only, thrown away';
const PRODUCT = '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01';
const TEMPLATE = '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01';

const dataDir = mkdtempSync(join(tmpdir(), 'vrp-screens-'));
const config = loadConfig({
  VRP_DATA_DIR: dataDir,
  VRP_LOG_LEVEL: 'warn',
  VRP_SIMULATED_SPEED: '0',
  VRP_RATE_LIMIT: '0',
  // Two small hosts: the last order finds no room and fails, as one does in real life.
  VRP_SIM_HOSTS: 'sim-host-1:8:16:200:100,sim-host-2:4:8:100:50',
});
const ctx = await createContext(config);
await seedDemoCatalog(ctx.store.db, Date.now());
const app = buildApp(ctx, { logger: false });
const driver = await createDriver(config, ctx.store.db);
const background = startBackground(ctx, driver, app.log, { pollMs: 50 });
await app.listen({ host: '127.0.0.1', port: 0 });
const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

async function reseller(name: string) {
  await ensureReseller(ctx.store.db, name, Date.now());
  const client = await registerApplication(
    ctx.store.db,
    { reseller: name, name: `${name} billing` },
    Date.now(),
  );
  const res = await fetch(`${origin}${BASE}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: client.client_secret,
    }),
  });
  const token = ((await res.json()) as { access_token: string }).access_token;
  const backup = async (serviceId: string) => {
    const res = await fetch(`${origin}${API}/service/${serviceId}/backup/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'x-envelope-variant': 'B' },
    });
    if (res.status >= 400) throw new Error(`backup ${serviceId}: ${res.status} ${await res.text()}`);
  };
  const order = async (domain: string, size: { cpu: number; ram: number; hdd: number }) => {
    const order = await fetch(`${origin}${API}/service/create-order`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'x-envelope-variant': 'B',
      },
      body: JSON.stringify({
        product_id: PRODUCT,
        template_id: TEMPLATE,
        domain_name: domain,
        ip: 1,
        backup: 10,
        ...size,
      }),
    });
    if (order.status >= 400) throw new Error(`order ${domain}: ${order.status} ${await order.text()}`);
    const [{ service_id }] = ((await order.json()) as { data: [{ service_id: string }] }).data;
    const create = await fetch(`${origin}${API}/service/${service_id}/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'x-envelope-variant': 'B' },
    });
    if (create.status >= 400) throw new Error(`create ${domain}: ${create.status} ${await create.text()}`);
  };
  return { order, backup };
}

async function settle() {
  for (let i = 0; i < 200; i++) {
    const row = await ctx.store.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', 'in', ['queued', 'running'])
      .executeTakeFirstOrThrow();
    if (Number(row.n) === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

try {
  const acme = await reseller('Acme Hosting');
  const globex = await reseller('Globex Cloud');
  for (const [order, domain, cpu, ram, hdd] of [
    [acme, 'www.acme.example', 2, 4, 40],
    [acme, 'db.acme.example', 4, 8, 60],
    [acme, 'mail.acme.example', 1, 2, 20],
    [globex, 'app1.globex.example', 2, 4, 40],
    [globex, 'app2.globex.example', 2, 4, 40],
    [globex, 'big.globex.example', 4, 8, 60],
  ] as const) {
    await order.order(domain, { cpu, ram, hdd });
  }
  await settle();
  const serviceId = (
    await ctx.store.db
      .selectFrom('services')
      .select('id')
      .where('domain_name', '=', 'db.acme.example')
      .executeTakeFirstOrThrow()
  ).id;
  // Two backups of the service the page shows: a full one, then an incremental one on it.
  for (let i = 0; i < 2; i++) {
    await acme.backup(serviceId);
    await settle();
  }
  await createOperator(ctx.store.db, { name: 'admin', password: PASSWORD }, Date.now());

  mkdirSync(OUT, { recursive: true });
  const browser = await chromium.launch({
    executablePath:
      process.env['VRP_TEST_CHROMIUM'] ??
      TOOLS.find((t) => t.name === 'chromium')?.find() ??
      '/usr/bin/chromium',
    args: [
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1',
      ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
    ],
  });
  const shoot = async (page: Page, path: string, file: string) => {
    await page.goto(`${origin}${CONSOLE}${path}`);
    await page.screenshot({ path: join(OUT, file), fullPage: true });
    console.log(`docs/console/${file}`);
  };
  const context = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    timezoneId: 'Europe/Berlin',
    locale: 'en-GB',
  });
  const page = await context.newPage();
  await shoot(page, '/login', 'login.png');
  await page.getByLabel('Operator name').fill('admin');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(`${origin}${CONSOLE}/`);
  for (const [path, file] of [
    ['/', 'overview.png'],
    ['/services', 'services.png'],
    [`/services/${serviceId}`, 'service.png'],
    ['/jobs?status=failed', 'jobs.png'],
    ['/resellers', 'resellers.png'],
    ['/hosts', 'hosts.png'],
    ['/ip-pools', 'ip-pools.png'],
    ['/catalog', 'catalog.png'],
    ['/usage', 'usage.png'],
    ['/audit', 'audit.png'],
    ['/notifications', 'notifications.png'],
    ['/two-factor', 'two-factor.png'],
  ] as const) {
    await shoot(page, path, file);
  }
  const phone = await browser.newContext({
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    isMobile: true,
    timezoneId: 'Europe/Berlin',
    locale: 'en-GB',
  });
  await phone.addCookies(await context.cookies());
  await shoot(await phone.newPage(), `/services/${serviceId}`, 'service-phone.png');
  await browser.close();
} finally {
  await background.stop(5000);
  await driver.close();
  await app.close();
  await ctx.store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
