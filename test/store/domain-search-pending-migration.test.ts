/**
 * Migration 031 (PostgreSQL): the domain substring index keeps a short pending list, so a
 * search never reads megabytes of entries not yet merged into the index (bench/FINDINGS.md,
 * "The operator's substring search on PostgreSQL"). On SQLite it changes nothing.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { listServices } from '../../src/store/repos/service-list.ts';
import type { Database } from '../../src/store/schema.ts';
import { plainServiceRow } from '../helpers/service-rows.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

/** A 128 kB list: 16 pages of 8 kB. */
const MAX_PENDING_PAGES = 16;

async function addServices(db: Kysely<Database>, from: number, n: number): Promise<void> {
  const now = Date.now();
  for (let start = from; start < from + n; start += 500) {
    const rows = [];
    for (let i = start; i < Math.min(from + n, start + 500); i++)
      rows.push(
        plainServiceRow({
          id: `s${i}`,
          resellerId: 'r1',
          domainName: `node${i}.shop.example.com`,
          now: now + i,
        }),
      );
    await db.insertInto('services').values(rows).execute();
  }
}

async function pendingPages(db: Kysely<Database>): Promise<number> {
  const r = await sql<{
    pending_pages: number;
  }>`select pending_pages from pgstatginindex('services_domain_trgm')`.execute(db);
  return Number(r.rows[0]?.pending_pages);
}

if (testStores().includes('postgres')) {
  describe('migration 031: the domain search index keeps a short pending list (postgres)', () => {
    test('new services wait in a list of at most 128 kB; the search finds them all', async () => {
      const { store, done } = await storeAtMigration('postgres', '030-billing-id');
      try {
        const { db } = store;
        await sql`create extension if not exists pgstattuple`.execute(db);
        await db
          .insertInto('resellers')
          .values({ id: 'r1', name: 'acme', enabled: 1, created_at: 1 })
          .execute();
        // Before: PostgreSQL's default list (4 MB) holds all 2,000 services' entries unmerged.
        await addServices(db, 0, 2000);
        const before = await pendingPages(db);
        assert.ok(before > MAX_PENDING_PAGES, `before the migration the list holds ${before} pages`);

        await migrateToLatest(db as Kysely<unknown>);
        await addServices(db, 2000, 2000);
        const after = await pendingPages(db);
        assert.ok(after <= MAX_PENDING_PAGES, `after the migration the list holds ${after} pages`);

        const found = async (q: string) =>
          (await listServices(db, { q, sort: 'domain', limit: 10 })).services.map((s) => s.id);
        assert.deepEqual(await found('node17.sho'), ['s17']);
        assert.deepEqual(await found('node3999.sh'), ['s3999']);
        const all = await listServices(db, { q: 'shop.example', sort: 'domain', limit: 10 });
        assert.equal(all.total, 4000);
      } finally {
        await done();
      }
    });
  });
}
