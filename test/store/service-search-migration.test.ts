/**
 * Migration 029 indexes the services' domain names for the operator's search (a trigram index:
 * pg_trgm on PostgreSQL, an FTS5 table on SQLite). Services stored before it are found by
 * substring and prefix once it has run, and services added, removed or renamed after it too.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { listServices } from '../../src/store/repos/service-list.ts';
import { plainServiceRow } from '../helpers/service-rows.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  describe(`migration 029: the services' search index (${kind})`, () => {
    test('services stored before it are found by substring and prefix; later writes keep the index in step', async () => {
      const { store, done } = await storeAtMigration(kind, '026-audit-actors');
      try {
        const { db } = store;
        const now = Date.now();
        await db
          .insertInto('resellers')
          .values({ id: 'r1', name: 'acme', enabled: 1, created_at: now })
          .execute();
        const row = (id: string, domainName: string, at: number) =>
          plainServiceRow({ id, resellerId: 'r1', domainName, now: at });
        await db
          .insertInto('services')
          .values([
            row('s1', 'old-shop.example.com', now),
            row('s2', 'old-blog.example.org', now + 1),
            row('s3', 'other.example.net', now + 2),
          ])
          .execute();

        await migrateToLatest(db as Kysely<unknown>);

        const found = async (q: string, match: 'contains' | 'prefix' = 'contains') =>
          (await listServices(db, { q, match, sort: 'domain', limit: 10 })).services.map((s) => s.id);
        assert.deepEqual(await found('shop'), ['s1']);
        assert.deepEqual(await found('example.or'), ['s2']);
        assert.deepEqual(await found('old-', 'prefix'), ['s2', 's1']);
        assert.deepEqual(await found('ot'), ['s3']);

        // Written after the migration: an insert, a renamed domain, a removed service.
        await db
          .insertInto('services')
          .values(row('s4', 'new-shop.example.com', now + 3))
          .execute();
        await db
          .updateTable('services')
          .set({ domain_name: 'renamed.example.com' })
          .where('id', '=', 's1')
          .execute();
        await db.deleteFrom('services').where('id', '=', 's2').execute();
        assert.deepEqual(await found('shop'), ['s4']);
        assert.deepEqual(await found('renamed'), ['s1']);
        assert.deepEqual(await found('blog'), []);
        assert.deepEqual(await found('example'), ['s4', 's3', 's1']);
      } finally {
        await done();
      }
    });
  });
}
