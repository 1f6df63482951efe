import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CatalogFileError, parseCatalogFile } from '../../src/domain/catalog-file.ts';
import { exportCatalog, importCatalog } from '../../src/store/catalog-import.ts';
import { DEMO_CATALOG, seedDemoCatalog } from '../../src/store/demo-catalog.ts';
import { createTestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

function problems(file: unknown): string[] {
  try {
    parseCatalogFile(file);
  } catch (err) {
    assert.ok(err instanceof CatalogFileError);
    return [...err.problems];
  }
  return [];
}

describe('catalogue file validation', () => {
  test('the demo catalogue is valid', () => {
    assert.deepEqual(problems(DEMO_CATALOG), []);
  });
  test('each problem names its path', () => {
    const f = structuredClone(DEMO_CATALOG) as any;
    f.products[1].config.ip = { min: 3, max: 2 };
    f.products[0].os_templates.push('11111111-1111-4111-8111-111111111111');
    f.products[2].plans[0].hdd = 1;
    f.os_templates[0].name = '';
    f.products[0].id = 'not-a-uuid';
    assert.deepEqual(problems(f).sort(), [
      'os_templates[0].name must be a non-empty string',
      'products[0].id must be a UUID',
      'products[0].os_templates[3] names no template in os_templates',
      'products[1].config.ip.max must be >= min',
      "products[2].plans[0].hdd must lie within the product's hdd bounds 250..4000",
    ]);
    assert.deepEqual(problems([]), ['the file must hold a JSON object']);
    assert.ok(
      problems({ os_templates: [], products: [{ ...DEMO_CATALOG.products[0], config: {} }] }).length >= 5,
    );
  });
  test('bounds as numeric strings are accepted and normalised', () => {
    const f = structuredClone(DEMO_CATALOG) as any;
    f.products[0].config.ram = { min: '1', max: '8' };
    assert.deepEqual(parseCatalogFile(f).products[0]!.config.ram, { min: 1, max: 8 });
  });
});

for (const store of testStores()) {
  describe(`catalogue import (${store})`, () => {
    test('seeds once, re-import updates by id, products in use are kept, export round-trips', async () => {
      const t = await createTestApp({}, { demo: false, store });
      try {
        const db = t.ctx.store.db;
        assert.equal(await seedDemoCatalog(db, Date.now()), true);
        assert.equal(await seedDemoCatalog(db, Date.now()), false);
        const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
        const exported = await exportCatalog(db);
        const expected = parseCatalogFile(DEMO_CATALOG);
        assert.deepEqual([...exported.os_templates].sort(byId), [...expected.os_templates].sort(byId));
        assert.deepEqual(exported.products, expected.products);

        // A service uses product 0; a new file drops product 0 and renames product 1.
        await db
          .insertInto('resellers')
          .values({ id: '00000000-0000-4000-8000-00000000000a', name: 'r', enabled: 1, created_at: 0 })
          .execute();
        const p0 = DEMO_CATALOG.products[0]!;
        await db
          .insertInto('services')
          .values({
            id: '00000000-0000-4000-8000-00000000000b',
            reseller_id: '00000000-0000-4000-8000-00000000000a',
            client_id: 'c',
            product_id: p0.id,
            template_id: p0.os_templates[0]!,
            domain_name: 'x',
            username: 'root',
            password_enc: 'x',
            cpu: 1,
            ram: 1,
            hdd: 20,
            ip_count: 1,
            backup: 0,
            status: 'pending',
            resume_status: null,
            suspend_reason: null,
            projected_status: 'pending',
            projected_resume: null,
            pending_jobs: 0,
            job_seq: 0,
            active_job_id: null,
            host_id: null,
            ips: '[]',
            disk_revision: null,
            created_at: 0,
            updated_at: 0,
            terminated_at: null,
          })
          .execute();
        const next = structuredClone(DEMO_CATALOG) as any;
        next.products.shift();
        const dropped = next.products.pop();
        next.products[0].name = 'VPS Business Plus';
        const summary = await importCatalog(db, parseCatalogFile(next), Date.now());
        assert.deepEqual(summary.kept, [p0.id]);
        assert.deepEqual(summary.removed, [dropped.id]);
        const after = await exportCatalog(db);
        assert.equal(after.products.find((p) => p.id === next.products[0].id)?.name, 'VPS Business Plus');
        assert.ok(
          after.products.some((p) => p.id === p0.id),
          'the product in use stays',
        );
        assert.ok(!after.products.some((p) => p.id === dropped.id));
      } finally {
        await t.close();
      }
    });

    test('an import that fails half-way changes nothing', async () => {
      const t = await createTestApp({}, { store });
      try {
        const db = t.ctx.store.db;
        const before = await exportCatalog(db);
        const bad = structuredClone(DEMO_CATALOG) as any;
        bad.products[0].name = 'Renamed';
        // Valid on paper, refused by the database: a plan id used by two products.
        bad.products[1].plans[0].id = bad.products[0].plans[0].id;
        await assert.rejects(async () => importCatalog(db, parseCatalogFile(bad), Date.now()));
        assert.deepEqual(await exportCatalog(db), before);
      } finally {
        await t.close();
      }
    });
  });
}
