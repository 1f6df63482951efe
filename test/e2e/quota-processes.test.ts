/**
 * The quota holds across server processes. Two processes on one store (SQLite file or
 * PostgreSQL) take 20 concurrent orders against a quota of 5 services: exactly 5 are placed.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { cliAudit } from '../../src/cli/audit.ts';
import { UNLIMITED } from '../../src/domain/quotas.ts';
import { setQuota } from '../../src/store/repos/quotas.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServers } from '../helpers/server-process.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  test(`two processes, one ${kind} store: 20 concurrent orders against a quota of 5 place exactly 5`, async () => {
    const pgDb = kind === 'postgres' ? await createPgDatabase() : undefined;
    const dataDir = mkdtempSync(join(tmpdir(), 'vrp-quota-'));
    const servers: ServerProcess[] = [];
    const { store, app } = await prepareStore(dataDir, pgDb?.url);
    after(async () => {
      for (const s of servers) await s.kill();
      await store.close();
      await pgDb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const acme = (await findResellerByName(store.db, 'acme'))!;
    await setQuota(store.db, acme.id, { ...UNLIMITED, services: 5 }, Date.now(), cliAudit('reseller.quota'));
    const env = {
      VRP_DATA_DIR: dataDir,
      VRP_SECRET_KEY: randomBytes(32).toString('hex'),
      VRP_ROLE: 'api',
      ...(pgDb ? { VRP_DATABASE_URL: pgDb.url } : {}),
    };
    await startServers([env, env], servers);
    const token = await fetchToken(servers[0]!.url, app);
    const clients = servers.map((s) => apiClient(() => s.url, token));
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        clients[i % 2]!.call('POST', 'service/create-order', smallOrder(`p${i}.example.com`)),
      ),
    );
    const placed = answers.filter((a) => a.status === 200);
    assert.equal(placed.length, 5, JSON.stringify(answers.map((a) => a.body.error_code ?? a.status)));
    for (const a of answers.filter((a) => a.status !== 200)) {
      assert.equal(a.status, 400);
      assert.equal(a.body.error_code, 'quota_exceeded');
    }
    const stored = await store.db
      .selectFrom('services')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('reseller_id', '=', acme.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(stored.n), 5);
    const usage = await clients[1]!.ok('GET', 'usage');
    assert.equal(usage.use.services, 5);
    assert.equal(usage.quota.services, 5);
  });
}
