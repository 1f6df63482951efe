/** Migration 009 on a store with hosts: every host it finds is active (placements go on as before). */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { createStore } from '../../src/store/database.ts';
import { migrateTo } from '../../src/store/migrate.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  test(`migration 009 keeps every existing host active (${kind})`, async () => {
    const pgDb = kind === 'postgres' ? await createPgDatabase() : undefined;
    const dir = mkdtempSync(join(tmpdir(), 'vrp-m009-'));
    const store = createStore({ databaseUrl: pgDb?.url, dataDir: dir });
    try {
      const db = store.db as Kysely<unknown>;
      await migrateTo(db, '008-operators-audit');
      await sql`insert into hypervisor_hosts (id, cpu, ram_gb, disk_gb, backup_gb, used_cpu, used_ram_gb, used_disk_gb, used_backup_gb)
        values ('old-host', 8, 16, 100, 0, 2, 4, 40, 0)`.execute(db);
      assert.deepEqual(await migrateTo(db, '009-host-state'), ['009-host-state']);
      const host = await store.db.selectFrom('hypervisor_hosts').selectAll().executeTakeFirstOrThrow();
      assert.equal(host.state, 'active');
      assert.equal(host.used_cpu, 2);
    } finally {
      await store.close();
      await pgDb?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
