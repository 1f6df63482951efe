/**
 * Migration 028 adds `retired` to products, plans and OS templates. A catalogue imported before
 * it stays offered: every item reads as not retired, and the export is the file it was.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { parseCatalogFile } from '../../src/domain/catalog-file.ts';
import { exportCatalog } from '../../src/store/catalog-import.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { listPlans } from '../../src/store/repos/plans.ts';
import { listProducts } from '../../src/store/repos/products.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  describe(`migration 028: catalogue admin (${kind})`, () => {
    test('a catalogue from before stays offered, and exports as it was', async () => {
      const { store, done } = await storeAtMigration(kind, '026-audit-actors');
      try {
        const { db } = store;
        const now = Date.now();
        const file = parseCatalogFile(DEMO_CATALOG);
        // Rows as the import wrote them before the migration (no `retired` column yet).
        for (const t of file.os_templates)
          await db
            .insertInto('os_templates')
            .values({ id: t.id, name: t.name, image: t.image ?? null, created_at: now, updated_at: now })
            .execute();
        for (const [i, p] of file.products.entries()) {
          await db
            .insertInto('products')
            .values({
              id: p.id,
              name: p.name,
              template: p.template,
              config: JSON.stringify(p.config),
              position: i,
              created_at: now,
              updated_at: now,
              traffic_gb: null,
              traffic_over: null,
            })
            .execute();
          for (const [j, t] of p.os_templates.entries())
            await db
              .insertInto('product_templates')
              .values({ product_id: p.id, template_id: t, position: j })
              .execute();
          for (const [j, pl] of p.plans.entries())
            await db
              .insertInto('plans')
              .values({
                id: pl.id,
                name: pl.name,
                cpu: pl.cpu,
                ram: pl.ram,
                hdd: pl.hdd,
                price: pl.price,
                product_id: p.id,
                position: j,
              })
              .execute();
        }
        assert.ok((await migrateToLatest(db as Kysely<unknown>)).includes('028-catalog-admin'));
        const products = await listProducts(db);
        assert.ok(
          products.length > 0 && products.every((p) => !p.retired && p.osTemplates.every((t) => !t.retired)),
        );
        assert.ok((await listPlans(db)).every((p) => !p.retired));
        const exported = await exportCatalog(db);
        assert.deepEqual(
          exported.products.map((p) => p.id),
          file.products.map((p) => p.id),
        );
        assert.ok(!JSON.stringify(exported).includes('retired'));
      } finally {
        await done();
      }
    });
  });
}
