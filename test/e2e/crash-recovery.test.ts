/**
 * Issue: "start the server, order and provision 200 services at a non-zero simulated speed,
 * kill -9 it mid-way, start it again, and assert every service ends running, no job is lost
 * or completed twice, no IP is given twice."
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ensureReseller, registerApplication } from '../../src/auth/applications.ts';
import { openStore } from '../../src/store/database.ts';
import { DEMO_CATALOG, seedDemoCatalog } from '../../src/store/demo-catalog.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';

const SERVICES = 200;
const API = '/vps_reseller_provider/public/api/v2';

test('kill -9 while 200 services provision: after a restart all run, no job lost or run twice, no IP twice', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-crash-'));
  const servers: ServerProcess[] = [];
  after(async () => {
    for (const s of servers) await s.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = {
    VRP_DATA_DIR: dataDir,
    VRP_SIMULATED_SPEED: '0.1',
    VRP_JOB_LEASE: '2s',
    VRP_WORKER_CONCURRENCY: '16',
  };

  const store = await openStore({ databaseUrl: undefined, dataDir });
  await seedDemoCatalog(store.db, Date.now());
  await ensureReseller(store.db, 'acme', Date.now());
  const app = await registerApplication(store.db, { reseller: 'acme' }, Date.now());
  await store.close();

  const first = await startServer(env);
  servers.push(first);
  const tokenRes = await fetch(`${first.url}/vps_reseller_provider/public/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'client_credentials',
      client_id: app.client_id,
      client_secret: app.client_secret,
    }),
  });
  const token = ((await tokenRes.json()) as { access_token: string }).access_token;
  const post = async (base: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${API}/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? '' : JSON.stringify(body),
    });
    const json = (await res.json()) as { data: unknown };
    assert.equal(res.status, 200, JSON.stringify(json));
    return json.data;
  };

  const product = DEMO_CATALOG.products[0]!;
  const ids: string[] = [];
  for (let batch = 0; batch < SERVICES / 20; batch++) {
    const created = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const data = (await post(first.url, 'service/create-order', {
          product_id: product.id,
          domain_name: `s${batch * 20 + i}.example.com`,
          template_id: product.os_templates[0],
          cpu: Number(product.config.cpu.min),
          ram: Number(product.config.ram.min),
          hdd: Number(product.config.hdd.min),
          ip: Number(product.config.ip.min),
          backup: Number(product.config.backup.min),
        })) as { service_id: string }[];
        const id = data[0]!.service_id;
        await post(first.url, `service/${id}/create`);
        return id;
      }),
    );
    ids.push(...created);
  }

  // Let some provision, then crash in the middle of the rest.
  const probe = await openStore({ databaseUrl: undefined, dataDir });
  const until = Date.now() + 30_000;
  for (;;) {
    const done = await probe.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'succeeded')
      .executeTakeFirstOrThrow();
    if (Number(done.n) >= SERVICES / 4 || Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const running = await probe.db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'running')
    .executeTakeFirstOrThrow();
  assert.ok(Number(running.n) > 0, 'jobs were running when the process was killed');
  await first.kill('SIGKILL');

  const second = await startServer(env);
  servers.push(second);
  const deadline = Date.now() + 90_000;
  for (;;) {
    const left = await probe.db
      .selectFrom('services')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '!=', 'running')
      .executeTakeFirstOrThrow();
    if (Number(left.n) === 0) break;
    assert.ok(Date.now() < deadline, `${left.n} services are not running yet:\n${second.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }

  const services = await probe.db
    .selectFrom('services')
    .select(['id', 'status', 'ips', 'pending_jobs'])
    .execute();
  assert.equal(services.length, SERVICES);
  assert.ok(services.every((s) => s.status === 'running' && s.pending_jobs === 0));
  const jobs = await probe.db.selectFrom('jobs').select(['service_id', 'action', 'status']).execute();
  assert.equal(jobs.length, SERVICES, 'one create job per service, none lost, none added');
  assert.ok(jobs.every((j) => j.action === 'create' && j.status === 'succeeded'));
  assert.equal(new Set(jobs.map((j) => j.service_id)).size, SERVICES);
  const ips = services.flatMap((s) => JSON.parse(s.ips) as string[]);
  assert.equal(ips.length, SERVICES * Number(product.config.ip.min));
  assert.equal(new Set(ips).size, ips.length, 'no address given twice');
  // The hypervisor holds exactly one VM per service, and the pool agrees with the services.
  const vms = await probe.db.selectFrom('sim_vms').select('id').execute();
  assert.deepEqual(vms.map((v) => v.id).sort(), [...ids].sort());
  const held = await probe.db
    .selectFrom('ip_addresses')
    .select('address')
    .where('vm_id', 'is not', null)
    .execute();
  assert.deepEqual(held.map((h) => h.address).sort(), [...ips].sort());
  await probe.close();
  assert.equal(await second.stop(), 0, 'graceful shutdown exits 0');
});
