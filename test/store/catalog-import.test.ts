import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Kysely, type KyselyPlugin, type QueryId, sql } from 'kysely';
import { CatalogFileError, MAX_AMOUNT, parseCatalogFile } from '../../src/domain/catalog-file.ts';
import { applyCatalog, exportCatalog, importCatalog, lockCatalog } from '../../src/store/catalog-import.ts';
import { openStore } from '../../src/store/database.ts';
import { DEMO_CATALOG, seedDemoCatalog } from '../../src/store/demo-catalog.ts';
import type { Database } from '../../src/store/schema.ts';
import { createTestApp } from '../helpers/app.ts';
import { plainServiceRow } from '../helpers/service-rows.ts';
import { testStores } from '../helpers/stores.ts';

type AnyFile = any;
const demo = (): AnyFile => structuredClone(DEMO_CATALOG);

function problems(file: unknown): string[] {
  try {
    parseCatalogFile(file);
  } catch (err) {
    assert.ok(err instanceof CatalogFileError);
    return [...err.problems];
  }
  return [];
}

/** A plugin that calls `done` once a read of `products` has come back. */
function afterCounting(done: () => void): KyselyPlugin {
  const reads = new Set<QueryId>();
  return {
    transformQuery({ node, queryId }) {
      if (node.kind === 'SelectQueryNode' && JSON.stringify(node.from).includes('"name":"products"'))
        reads.add(queryId);
      return node;
    },
    async transformResult({ result, queryId }) {
      if (reads.has(queryId)) done();
      return result;
    },
  };
}

describe('catalogue file validation', () => {
  test('the demo catalogue is valid and as documented', () => {
    assert.deepEqual(problems(DEMO_CATALOG), []);
    assert.ok(DEMO_CATALOG.products.length >= 3);
    assert.ok(DEMO_CATALOG.products.some((p) => p.config.backup.min === 0));
    for (const p of DEMO_CATALOG.products) assert.ok(p.plans.length >= 2 && p.plans.length <= 4);
  });

  test('each problem names its path', () => {
    const f = demo();
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
    assert.deepEqual(problems({ os_templates: {}, products: null }), [
      'os_templates must be an array',
      'products must be an array',
    ]);
  });

  test('bounds: min <= max, at least 1 except backup, whole numbers within range, one message each', () => {
    const f = demo();
    f.products[1].config.cpu.max = 1;
    assert.deepEqual(problems(f), ['products[1].config.cpu.max must be >= min']);

    const g = demo();
    g.products[0].config.ram.min = 0;
    g.products[0].config.hdd.max = 1e12;
    g.products[1].config.ip.min = 1.5;
    g.products[2].config.backup.max = -1;
    assert.deepEqual(problems(g), [
      'products[0].config.ram.min must be a whole number >= 1',
      `products[0].config.hdd.max must be at most ${MAX_AMOUNT}`,
      'products[1].config.ip.min must be a whole number >= 1',
      'products[2].config.backup.max must be a whole number >= 0',
    ]);

    const h = demo();
    delete h.products[0].config;
    h.products[1].config.ram = 8;
    assert.deepEqual(problems(h), [
      'products[0].config must be an object with ram, ip, cpu, hdd, backup',
      'products[1].config.ram must be an object with min and max',
    ]);
  });

  test('bounds as the API shows them (numeric strings with units) are normalised to integers', () => {
    const f = demo();
    f.products[0].config.ram = { min: '1', max: '8', unit: 'GB' };
    f.products[2].config.backup = { min: '0', max: '50' };
    const parsed = parseCatalogFile(f);
    assert.deepEqual(parsed.products[0]?.config.ram, { min: 1, max: 8 });
    assert.deepEqual(parsed.products[2]?.config.backup, { min: 0, max: 50 });
    f.products[0].config.ram.unit = 'MB';
    f.products[0].config.cpu.min = '1.5';
    assert.deepEqual(problems(f), [
      'products[0].config.ram.unit must be "GB" (units are fixed)',
      'products[0].config.cpu.min must be a whole number >= 1',
    ]);
  });

  test('misspelt fields, repeated ids, bad plans and names are refused', () => {
    const f = demo();
    f.products[0].plan = f.products[0].plans;
    f.os_templates[1].images = 'x';
    f.products[1].plans[0].id = f.products[0].plans[0].id;
    f.products[2].id = f.os_templates[0].id;
    f.products[0].plans[1].price = '8';
    f.products[0].plans[2].cpu = 0;
    f.products[1].name = 'Bad\u0000name';
    f.products[1].template = 'x'.repeat(201);
    f.products[2].os_templates = [];
    assert.deepEqual(problems(f), [
      'os_templates[1].images is not a known field',
      'products[0].plan is not a known field',
      'products[0].plans[1].price must be a number >= 0',
      'products[0].plans[2].cpu must be a whole number >= 1',
      'products[1].name must not contain control characters',
      'products[1].template must be at most 200 characters',
      `products[1].plans[0].id repeats ${DEMO_CATALOG.products[0]?.plans[0]?.id}`,
      `products[2].id repeats ${DEMO_CATALOG.os_templates[0]?.id}`,
      'products[2].os_templates must be a non-empty array of template ids',
    ]);
  });

  test('traffic limits: traffic_gb a whole number >= 1 with traffic_over "throttle:MBIT" or "suspend", both or neither', () => {
    const ok = demo();
    ok.products[0].traffic_gb = 500;
    ok.products[0].traffic_over = 'throttle:10';
    ok.products[1].traffic_gb = '1000';
    ok.products[1].traffic_over = 'suspend';
    const parsed = parseCatalogFile(ok);
    assert.deepEqual(
      parsed.products.map((p) => [p.traffic_gb, p.traffic_over]),
      [
        [500, 'throttle:10'],
        [1000, 'suspend'],
        [undefined, undefined],
      ],
    );
    const f = demo();
    f.products[0].traffic_gb = 0;
    f.products[0].traffic_over = 'suspend';
    f.products[1].traffic_gb = 10;
    f.products[2].traffic_gb = 10;
    f.products[2].traffic_over = 'throttle:0';
    assert.deepEqual(problems(f), [
      'products[0].traffic_gb must be a whole number >= 1',
      'products[1].traffic_over must say what happens past traffic_gb: "throttle:MBIT" or "suspend"',
      'products[2].traffic_over must be "throttle:MBIT" (MBIT 1..100000) or "suspend"',
    ]);
    const g = demo();
    g.products[0].traffic_over = 'suspend';
    g.products[1].traffic_gb = 5;
    g.products[1].traffic_over = 'throttle';
    assert.deepEqual(problems(g), [
      'products[0].traffic_over needs traffic_gb',
      'products[1].traffic_over must be "throttle:MBIT" (MBIT 1..100000) or "suspend"',
    ]);
  });

  test('a lone surrogate (stored as U+FFFD, a silent change) is refused by its path', () => {
    const cases: [(f: AnyFile) => void, string][] = [
      [
        (f) => {
          f.products[1].plans[0].name = 'Plan \ud800';
        },
        'products[1].plans[0].name',
      ],
      [
        (f) => {
          f.os_templates[0].image = 'debian\udc00.qcow2';
        },
        'os_templates[0].image',
      ],
      [
        (f) => {
          f.products[0].template = '\udfff';
        },
        'products[0].template',
      ],
    ];
    for (const [spoil, path] of cases) {
      const bad = demo();
      spoil(bad);
      assert.deepEqual(problems(bad), [
        `${path} holds text that cannot be stored (U+0000 or an unpaired surrogate)`,
      ]);
    }
  });

  test('ids are stored lower-case; names are trimmed', () => {
    const f = demo();
    f.products[0].id = f.products[0].id.toUpperCase();
    f.products[0].name = '  VPS Starter  ';
    const p = parseCatalogFile(f).products[0];
    assert.equal(p?.id, DEMO_CATALOG.products[0]?.id);
    assert.equal(p?.name, 'VPS Starter');
  });
});

const RESELLER = '00000000-0000-4000-8000-00000000000a';

/** A service (an existing order) that uses a product and a template. */
async function insertService(db: Kysely<Database>, id: string, productId: string, templateId: string) {
  await db
    .insertInto('resellers')
    .values({ id: RESELLER, name: 'r', enabled: 1, created_at: 0 })
    .onConflict((oc) => oc.doNothing())
    .execute();
  const row = plainServiceRow({
    id,
    resellerId: RESELLER,
    clientId: 'c',
    productId,
    templateId,
    domainName: 'x.example',
    now: 0,
  });
  await db
    .insertInto('services')
    .values({ ...row, status: 'running', projected_status: 'running' })
    .execute();
}

for (const store of testStores()) {
  describe(`catalogue import (${store})`, () => {
    test('the demo catalogue is seeded once, and exports as it was given', async () => {
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
        // Seeding does nothing once the operator has a catalogue of their own, even a changed one.
        const own = demo();
        own.products = [own.products[2]];
        await importCatalog(db, parseCatalogFile(own), Date.now());
        assert.equal(await seedDemoCatalog(db, Date.now()), false);
        assert.equal((await exportCatalog(db)).products.length, 1);
      } finally {
        await t.close();
      }
    });

    test('export -> import -> export is the same file; file order is the listing order', async () => {
      const t = await createTestApp({}, { store });
      try {
        const db = t.ctx.store.db;
        const first = await exportCatalog(db);
        const summary = await importCatalog(db, parseCatalogFile(JSON.parse(JSON.stringify(first))), 1);
        assert.deepEqual(summary, { products: 3, plans: 8, templates: 4, removed: [], kept: [] });
        assert.deepEqual(await exportCatalog(db), first);

        // A product's traffic limit goes in and comes back out; taken out again, it is gone.
        const limited = demo();
        limited.products[0].traffic_gb = 250;
        limited.products[0].traffic_over = 'throttle:5';
        await importCatalog(db, parseCatalogFile(limited), 2);
        const withLimit = await exportCatalog(db);
        assert.deepEqual(
          [withLimit.products[0]?.traffic_gb, withLimit.products[0]?.traffic_over],
          [250, 'throttle:5'],
        );
        assert.equal(withLimit.products[1]?.traffic_gb, undefined);
        await importCatalog(db, parseCatalogFile(demo()), 2);
        assert.deepEqual(await exportCatalog(db), first);

        const reversed = demo();
        reversed.products.reverse();
        reversed.products[0].plans.reverse();
        await importCatalog(db, parseCatalogFile(reversed), 2);
        const after = await exportCatalog(db);
        assert.deepEqual(
          after.products.map((p) => p.id),
          reversed.products.map((p: { id: string }) => p.id),
        );
        assert.deepEqual(
          after.products[0]?.plans.map((p) => p.id),
          reversed.products[0].plans.map((p: { id: string }) => p.id),
        );
        t.ctx.catalog.invalidate();
        const res = await t.app.inject({
          method: 'GET',
          url: '/vps_reseller_provider/public/api/v2/products',
          headers: { authorization: `Bearer ${await t.token()}` },
        });
        assert.equal(res.statusCode, 200, res.body);
        const listed = JSON.stringify(res.json());
        const positions = reversed.products.map((p: { id: string }) => listed.indexOf(p.id));
        assert.deepEqual(
          positions,
          [...positions].sort((a, b) => a - b),
          'the API lists products in file order',
        );
      } finally {
        await t.close();
      }
    });

    test('re-import updates by id; a product or template in use is kept, unused ones are removed', async () => {
      const t = await createTestApp({}, { store });
      try {
        const db = t.ctx.store.db;
        const [starter, business, storage] = DEMO_CATALOG.products;
        assert.ok(starter && business && storage);
        const rocky = '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a03';
        const alma = '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a04';
        await insertService(db, '00000000-0000-4000-8000-00000000000b', starter.id, rocky);

        // The new file drops Starter (in use) and Storage (unused), and Rocky (in use) and Alma (unused).
        const next = demo();
        next.os_templates = next.os_templates.filter((o: { id: string }) => o.id !== rocky && o.id !== alma);
        next.products = [next.products[1]];
        next.products[0].name = 'VPS Business Plus';
        next.products[0].os_templates = next.os_templates.map((o: { id: string }) => o.id);
        next.products[0].plans[0].price = 21;
        const summary = await importCatalog(db, parseCatalogFile(next), Date.now());
        assert.deepEqual([...summary.kept].sort(), [starter.id, rocky].sort());
        assert.deepEqual([...summary.removed].sort(), [storage.id, alma].sort());

        const after = await exportCatalog(db);
        const b = after.products.find((p) => p.id === business.id);
        assert.equal(b?.name, 'VPS Business Plus');
        assert.equal(b?.plans[0]?.price, 21);
        assert.deepEqual(b?.os_templates, next.products[0].os_templates);
        assert.ok(
          after.products.some((p) => p.id === starter.id),
          'the product in use stays',
        );
        assert.ok(
          after.os_templates.some((o) => o.id === rocky),
          'the template in use stays',
        );
        assert.ok(!after.products.some((p) => p.id === storage.id));
        assert.ok(!after.os_templates.some((o) => o.id === alma));
        const plans = await db
          .selectFrom('plans')
          .select('id')
          .where('product_id', '=', storage.id)
          .execute();
        assert.deepEqual(plans, [], "a removed product's plans go with it");
      } finally {
        await t.close();
      }
    });

    test('a plan may move to another product, also from one no longer in the file', async () => {
      const t = await createTestApp({}, { store });
      try {
        const db = t.ctx.store.db;
        const f = demo();
        // Business 4 (2 cpu, 4 GB, 80 GB) fits Starter's bounds; Starter comes first in the file.
        const moved = f.products[1].plans.shift();
        f.products[0].plans.push(moved);
        await importCatalog(db, parseCatalogFile(f), 1);
        let after = await exportCatalog(db);
        assert.ok(after.products[0]?.plans.some((p) => p.id === moved.id));
        assert.ok(!after.products[1]?.plans.some((p) => p.id === moved.id));

        // Storage is in use and leaves the file; its plan moves to Business.
        await insertService(
          db,
          '00000000-0000-4000-8000-00000000000c',
          f.products[2].id,
          f.products[2].os_templates[0],
        );
        const g = structuredClone(f);
        const storagePlan = { ...g.products[2].plans[0], hdd: 500, ram: 4, cpu: 2 };
        g.products.pop();
        g.products[1].plans.push(storagePlan);
        const summary = await importCatalog(db, parseCatalogFile(g), 2);
        assert.deepEqual(summary.kept, [f.products[2].id]);
        after = await exportCatalog(db);
        assert.deepEqual(after.products.find((p) => p.id === g.products[1].id)?.plans.at(-1), storagePlan);
      } finally {
        await t.close();
      }
    });

    test('an import that fails half-way changes nothing', async () => {
      const t = await createTestApp({}, { store });
      try {
        const db = t.ctx.store.db;
        const before = await exportCatalog(db);
        // The database refuses one plan, after templates, products and links were written.
        if (store === 'sqlite') {
          await sql`create trigger plans_boom before insert on plans when new.name = 'Boom'
            begin select raise(abort, 'boom'); end`.execute(db);
        } else {
          await sql`create function plans_boom() returns trigger language plpgsql as $$
            begin if new.name = 'Boom' then raise exception 'boom'; end if; return new; end $$`.execute(db);
          await sql`create trigger plans_boom before insert on plans
            for each row execute function plans_boom()`.execute(db);
        }
        const bad = demo();
        bad.products[0].name = 'Renamed';
        bad.products.pop();
        bad.os_templates.push({ id: '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a99', name: 'Arch', image: null });
        bad.products[1].plans[2].name = 'Boom';
        const file = parseCatalogFile(bad);
        await assert.rejects(() => importCatalog(db, file, Date.now()), /boom/);
        assert.deepEqual(await exportCatalog(db), before);
      } finally {
        await t.close();
      }
    });

    test('the demo seed of a first start beside an import (`vrp catalog import`) keeps the imported catalogue', async () => {
      const t = await createTestApp({}, { demo: false, store });
      // The import is another process's (`vrp catalog import`): a store of its own on the same database.
      const other = await openStore({ databaseUrl: t.ctx.config.databaseUrl, dataDir: t.dataDir });
      try {
        const db = t.ctx.store.db;
        // The operator's own catalogue: nothing in common with the demo's.
        const own = demo();
        own.products = [own.products[0]];
        own.products[0].id = '0c0c0c0c-0000-4000-8000-000000000001';
        own.products[0].name = 'Our own plan';
        own.products[0].plans = own.products[0].plans.map((plan: AnyFile, i: number) => ({
          ...plan,
          id: `0c0c0c0c-0000-4000-8000-00000000010${i}`,
        }));
        own.os_templates = [{ id: '0c0c0c0c-0000-4000-8000-000000000201', name: 'Our OS', image: null }];
        own.products[0].os_templates = ['0c0c0c0c-0000-4000-8000-000000000201'];
        const file = parseCatalogFile(own);
        // The import, written but not yet committed, while the seed starts.
        const held = Promise.withResolvers<void>();
        const written = Promise.withResolvers<void>();
        const imported = other.db.transaction().execute(async (tx) => {
          await lockCatalog(tx, 1);
          await applyCatalog(tx, file, 1);
          written.resolve();
          await held.promise;
        });
        await written.promise;
        // The seed has looked at the store (no products committed yet) before the import commits.
        const looked = Promise.withResolvers<void>();
        const seeded = seedDemoCatalog(db.withPlugin(afterCounting(looked.resolve)), 2);
        await looked.promise;
        held.resolve();
        await imported;
        assert.equal(await seedDemoCatalog(db, 3), false, 'a store with a catalogue gets no demo');
        assert.equal(await seeded, false, 'the seed saw the imported catalogue');
        assert.deepEqual(await exportCatalog(db), file);
      } finally {
        await other.close();
        await t.close();
      }
    });

    test('two imports at once both succeed (two processes seeding a fresh store)', async () => {
      const t = await createTestApp({}, { demo: false, store });
      try {
        const db = t.ctx.store.db;
        const file = parseCatalogFile(DEMO_CATALOG);
        await Promise.all([
          importCatalog(db, file, 1),
          importCatalog(db, file, 2),
          importCatalog(db, file, 3),
        ]);
        const exported = await exportCatalog(db);
        assert.deepEqual(exported.products, file.products);
      } finally {
        await t.close();
      }
    });
  });
}
