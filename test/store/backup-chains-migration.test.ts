/**
 * Migration 019: backups gain their place in a chain and their stored size. Backups taken before
 * it are `legacy` (kept on their host, restored and deleted by the driver), full, 0 bytes in the
 * backup store, with the host they were taken on.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { insertOldService, serviceRowBefore017 } from '../helpers/old-rows.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  describe(`migration 019: backup chains (${kind})`, () => {
    test("existing backups become legacy, full, with the host they were taken on (else their service's)", async () => {
      const { store, done } = await storeAtMigration(kind, '018-host-records');
      try {
        const db = store.db;
        const now = Date.now();
        await db
          .insertInto('resellers')
          .values({ id: 'r1', name: 'acme', enabled: 1, created_at: now })
          .execute();
        const row = serviceRowBefore017({
          id: 's1',
          resellerId: 'r1',
          clientId: 'c1',
          productId: 'p1',
          templateId: 't1',
          domainName: 's1.example.com',
          username: 'root',
          passwordEnc: 'x',
          cpu: 1,
          ram: 1,
          hdd: 10,
          ipCount: 1,
          backup: 10,
          now,
        });
        await insertOldService(db, {
          ...row,
          status: 'running',
          projected_status: 'running',
          host_id: 'sim-b',
        });
        for (const [id, size] of [
          ['b1', 2.5],
          ['b2', 1.5],
        ] as const)
          await sql`insert into backups (id, service_id, reseller_id, status, kind, size_gb, created_at, updated_at)
            values (${id}, 's1', 'r1', 'available', 'manual', ${size}, ${now}, ${now})`.execute(db);
        await sql`insert into sim_backups (id, vm_id, host_id, size_gb, content_generation, created_at)
          values ('b1', 's1', 'sim-a', 2.5, 3, ${now})`.execute(db);
        await migrateToLatest(db as Kysely<unknown>);
        const rows = await db
          .selectFrom('backups')
          .select([
            'id',
            'format',
            'parent_id',
            'stored_bytes',
            'disk_bytes',
            'host_id',
            'keep_until',
            'size_gb',
          ])
          .orderBy('id')
          .execute();
        assert.deepEqual(
          rows.map((r) => ({ ...r })),
          [
            {
              id: 'b1',
              format: 'legacy',
              parent_id: null,
              stored_bytes: 0,
              disk_bytes: 0,
              host_id: 'sim-a',
              keep_until: null,
              size_gb: 2.5,
            },
            {
              id: 'b2',
              format: 'legacy',
              parent_id: null,
              stored_bytes: 0,
              disk_bytes: 0,
              host_id: 'sim-b',
              keep_until: null,
              size_gb: 1.5,
            },
          ],
        );
        await db
          .insertInto('sim_checkpoints')
          .values({ vm_id: 's1', name: 'b3', content_generation: 4, created_at: now })
          .execute();
        assert.equal((await db.selectFrom('sim_checkpoints').selectAll().execute()).length, 1);
      } finally {
        await done();
      }
    });
  });
}
