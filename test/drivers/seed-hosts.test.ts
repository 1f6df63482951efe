/**
 * The hosts settings seed a fresh store once, also when several processes open it at the same
 * moment (the server's processes on one PostgreSQL store start together): none fails, the hosts
 * are written once, and a later seed with other settings changes nothing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { seedHosts } from '../../src/drivers/hosts.ts';
import { openStore } from '../../src/store/database.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  test(`seeding from four connections (at once on PostgreSQL): no failure, the hosts once (${kind})`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vrp-seed-'));
    const pg = kind === 'postgres' ? await createPgDatabase() : undefined;
    const stores = [];
    try {
      for (let i = 0; i < 4; i++) stores.push(await openStore({ databaseUrl: pg?.url, dataDir }));
      const hosts = [
        { id: 'seed-a', cpu: 8, ramGb: 16, diskGb: 100 },
        { id: 'seed-b', cpu: 8, ramGb: 16, diskGb: 100 },
      ];
      // PostgreSQL: at once, as processes start. SQLite's connections here share one thread, whose
      // synchronous BEGIN IMMEDIATE would wait on the others' open transactions: one after another.
      if (kind === 'postgres')
        await Promise.all(stores.map((s) => seedHosts(s.db, 'simulated', hosts, 1000)));
      else for (const s of stores) await seedHosts(s.db, 'simulated', hosts, 1000);
      await seedHosts(stores[0]!.db, 'simulated', [{ id: 'later', cpu: 1, ramGb: 1, diskGb: 1 }], 2000);
      const rows = await stores[0]!.db
        .selectFrom('hypervisor_hosts')
        .select(['id', 'cpu'])
        .orderBy('id')
        .execute();
      assert.deepEqual(
        rows.map((r) => [r.id, r.cpu]),
        [
          ['seed-a', 8],
          ['seed-b', 8],
        ],
      );
    } finally {
      for (const s of stores) await s.close();
      await pg?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
