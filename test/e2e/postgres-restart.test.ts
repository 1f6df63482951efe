/**
 * Issue 5: a PostgreSQL restart while the server runs gives 503 store_unavailable (not 500,
 * not a crash) on /readyz and on requests; the server recovers by itself; no job is lost.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type PostgresServer, startPostgres } from '../../scripts/postgres.ts';
import { ensureReseller, registerApplication } from '../../src/auth/applications.ts';
import { openStore } from '../../src/store/database.ts';
import { DEMO_CATALOG, seedDemoCatalog } from '../../src/store/demo-catalog.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';

const API = '/vps_reseller_provider/public/api/v2';

test('PostgreSQL restarts under a running server: 503 while down, recovery, no job lost', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const pg: PostgresServer = await startPostgres();
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-pgrestart-'));
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.kill();
    pg.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const store = await openStore({ databaseUrl: pg.url, dataDir });
  await seedDemoCatalog(store.db, Date.now());
  await ensureReseller(store.db, 'acme', Date.now());
  const app = await registerApplication(store.db, { reseller: 'acme' }, Date.now());
  await store.close();

  server = await startServer({
    VRP_DATABASE_URL: pg.url,
    VRP_DATA_DIR: dataDir,
    VRP_SIMULATED_SPEED: '0.5',
    VRP_JOB_LEASE: '2s',
  });
  const base = server.url;
  const token = (
    (await (
      await fetch(`${base}/vps_reseller_provider/public/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          grant_type: 'client_credentials',
          client_id: app.client_id,
          client_secret: app.client_secret,
        }),
      })
    ).json()) as { access_token: string }
  ).access_token;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${API}/${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: method === 'GET' ? undefined : JSON.stringify(body ?? {}),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const p = DEMO_CATALOG.products[0]!;
  const order = await api('POST', 'service/create-order', {
    product_id: p.id,
    domain_name: 'pg.example.com',
    template_id: p.os_templates[0],
    cpu: 1,
    ram: 1,
    hdd: 20,
    ip: 1,
    backup: 10,
  });
  assert.equal(order.status, 200);
  const id = order.body.data[0].service_id;
  assert.equal((await api('POST', `service/${id}/create`)).status, 200);
  const waitFor = async (want: string, ms: number) => {
    const until = Date.now() + ms;
    for (;;) {
      const r = await api('GET', `service/${id}/status`).catch(() => undefined);
      if (r?.status === 200 && r.body.data.status === want && r.body.data.job === null) return;
      assert.ok(Date.now() < until, `service did not become ${want}: ${JSON.stringify(r?.body)}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  };
  await waitFor('running', 30_000);

  // A job is running (a reboot takes 2.5 s at this speed) when the database goes away.
  assert.equal((await api('POST', `service/${id}/restart`)).status, 200);
  await new Promise((r) => setTimeout(r, 300));
  const seen = { ready: [] as number[], api: [] as number[], codes: new Set<string>() };
  const restart = pg.restart(4000);
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const ready = await fetch(`${base}/readyz`);
    seen.ready.push(ready.status);
    const r = await api('GET', `service/${id}/status`);
    seen.api.push(r.status);
    if (r.body.error_code) seen.codes.add(r.body.error_code);
  }
  await restart;
  assert.ok(seen.ready.includes(503), `readyz answered ${seen.ready}`);
  assert.ok(seen.api.includes(503), `the API answered ${seen.api}`);
  assert.ok(!seen.api.includes(500), 'never a 500');
  assert.deepEqual([...seen.codes], ['store_unavailable']);

  // Back by itself: ready again, and the interrupted job finishes (retried after its lease).
  const until = Date.now() + 30_000;
  while ((await fetch(`${base}/readyz`)).status !== 200) {
    assert.ok(Date.now() < until, 'readyz did not recover');
    await new Promise((r) => setTimeout(r, 200));
  }
  await waitFor('running', 30_000);
  const jobs = (await api('GET', `service/${id}/jobs`)).body.data;
  assert.deepEqual(
    jobs.map((j: { action: string; status: string }) => [j.action, j.status]),
    [
      ['restart', 'succeeded'],
      ['create', 'succeeded'],
    ],
  );
  assert.equal(server.child.exitCode, null, 'the server did not crash');
  assert.equal(await server.stop(), 0);
});
