import type { Kysely, Transaction } from 'kysely';
import type { CatalogFile } from '../domain/catalog-file.ts';
import type { Database } from './schema.ts';

export interface ImportSummary {
  readonly products: number;
  readonly plans: number;
  readonly templates: number;
  /** Ids no longer in the file and removed. */
  readonly removed: readonly string[];
  /** Ids no longer in the file but kept because services still use them. */
  readonly kept: readonly string[];
}

/**
 * Applies a validated catalogue in one transaction (all or nothing). Updates by id; a product
 * or template missing from the file is removed unless a service still refers to it, so a
 * re-import never breaks existing orders.
 */
export async function importCatalog(
  db: Kysely<Database>,
  file: CatalogFile,
  now: number,
): Promise<ImportSummary> {
  return db.transaction().execute(async (tx) => {
    await lockCatalog(tx, now);
    return applyCatalog(tx, file, now);
  });
}

/**
 * One change of the catalogue at a time, whatever makes it (an import, the operator API, the demo
 * catalogue's seed): each takes this row's lock first, so that what it reads of the catalogue
 * after is what the change before it committed. On SQLite the transaction's write lock does it
 * already.
 */
export async function lockCatalog(tx: Transaction<Database>, now: number): Promise<void> {
  await tx
    .insertInto('meta')
    .values({ key: 'catalog_changed', value: String(now) })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: String(now) }))
    .execute();
}

/** What importCatalog does, in the caller's transaction (the operator API's changes apply a whole catalogue too). */
export async function applyCatalog(
  tx: Transaction<Database>,
  file: CatalogFile,
  now: number,
): Promise<ImportSummary> {
  const removed: string[] = [];
  const kept: string[] = [];
  const productIds = file.products.map((p) => p.id);
  const planIds = file.products.flatMap((p) => p.plans.map((pl) => pl.id));
  // Upserts rather than plain inserts: two processes seeding a fresh store at once both succeed.
  for (const rows of chunks(
    file.os_templates.map((t) => ({
      id: t.id,
      name: t.name,
      image: t.image ?? null,
      created_at: now,
      updated_at: now,
      retired: t.retired ? 1 : 0,
    })),
  )) {
    await tx
      .insertInto('os_templates')
      .values(rows)
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          name: eb.ref('excluded.name'),
          image: eb.ref('excluded.image'),
          updated_at: eb.ref('excluded.updated_at'),
          retired: eb.ref('excluded.retired'),
        })),
      )
      .execute();
  }
  for (const rows of chunks(
    file.products.map((p, i) => ({
      id: p.id,
      name: p.name,
      template: p.template,
      config: JSON.stringify(p.config),
      position: i,
      created_at: now,
      updated_at: now,
      traffic_gb: p.traffic_gb ?? null,
      traffic_over: p.traffic_over ?? null,
      retired: p.retired ? 1 : 0,
    })),
  )) {
    await tx
      .insertInto('products')
      .values(rows)
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          name: eb.ref('excluded.name'),
          template: eb.ref('excluded.template'),
          config: eb.ref('excluded.config'),
          position: eb.ref('excluded.position'),
          traffic_gb: eb.ref('excluded.traffic_gb'),
          traffic_over: eb.ref('excluded.traffic_over'),
          updated_at: eb.ref('excluded.updated_at'),
          retired: eb.ref('excluded.retired'),
        })),
      )
      .execute();
  }
  // A plan may move to another product (even from one that is no longer in the file), so
  // every plan the file names is cleared first, with the old plans of the file's products.
  for (const ids of chunks(productIds)) {
    await tx.deleteFrom('product_templates').where('product_id', 'in', ids).execute();
    await tx.deleteFrom('plans').where('product_id', 'in', ids).execute();
  }
  for (const ids of chunks(planIds)) {
    await tx.deleteFrom('plans').where('id', 'in', ids).execute();
  }
  for (const rows of chunks(
    file.products.flatMap((p) =>
      p.os_templates.map((templateId, j) => ({ product_id: p.id, template_id: templateId, position: j })),
    ),
  )) {
    await tx
      .insertInto('product_templates')
      .values(rows)
      .onConflict((oc) =>
        oc
          .columns(['product_id', 'template_id'])
          .doUpdateSet((eb) => ({ position: eb.ref('excluded.position') })),
      )
      .execute();
  }
  for (const rows of chunks(
    file.products.flatMap((p) =>
      p.plans.map(({ retired, ...plan }, j) => ({
        ...plan,
        product_id: p.id,
        position: j,
        retired: retired ? 1 : 0,
      })),
    ),
  )) {
    await tx
      .insertInto('plans')
      .values(rows)
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          product_id: eb.ref('excluded.product_id'),
          name: eb.ref('excluded.name'),
          cpu: eb.ref('excluded.cpu'),
          ram: eb.ref('excluded.ram'),
          hdd: eb.ref('excluded.hdd'),
          price: eb.ref('excluded.price'),
          position: eb.ref('excluded.position'),
          retired: eb.ref('excluded.retired'),
        })),
      )
      .execute();
  }
  const staleProducts = await tx
    .selectFrom('products')
    .select('id')
    .$if(productIds.length > 0, (q) => q.where('id', 'not in', productIds))
    .execute();
  for (const { id } of staleProducts) {
    const used = await tx
      .selectFrom('services')
      .select('id')
      .where('product_id', '=', id)
      .limit(1)
      .executeTakeFirst();
    if (used) {
      kept.push(id);
      continue;
    }
    await tx.deleteFrom('plans').where('product_id', '=', id).execute();
    await tx.deleteFrom('product_templates').where('product_id', '=', id).execute();
    await tx.deleteFrom('products').where('id', '=', id).execute();
    removed.push(id);
  }
  const templateIds = file.os_templates.map((t) => t.id);
  const staleTemplates = await tx
    .selectFrom('os_templates')
    .select('id')
    .$if(templateIds.length > 0, (q) => q.where('id', 'not in', templateIds))
    .execute();
  for (const { id } of staleTemplates) {
    const used =
      (await tx
        .selectFrom('services')
        .select('id')
        .where('template_id', '=', id)
        .limit(1)
        .executeTakeFirst()) ??
      (await tx
        .selectFrom('product_templates')
        .select('product_id')
        .where('template_id', '=', id)
        .limit(1)
        .executeTakeFirst());
    if (used) {
      kept.push(id);
      continue;
    }
    await tx.deleteFrom('os_templates').where('id', '=', id).execute();
    removed.push(id);
  }
  return {
    products: file.products.length,
    plans: file.products.reduce((n, p) => n + p.plans.length, 0),
    templates: file.os_templates.length,
    removed,
    kept,
  };
}

/** Rows per statement: well under SQLite's bound-parameter limit for every table here. */
const CHUNK = 200;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/** The catalogue as a file: what `importCatalog` takes back unchanged. */
export async function exportCatalog(db: Kysely<Database>): Promise<CatalogFile> {
  // One after another: a transaction (the operator API's changes read it in theirs) runs one statement at a time.
  const templates = await db.selectFrom('os_templates').selectAll().orderBy('name').orderBy('id').execute();
  const products = await db.selectFrom('products').selectAll().orderBy('position').orderBy('id').execute();
  const links = await db.selectFrom('product_templates').selectAll().orderBy('position').execute();
  const plans = await db.selectFrom('plans').selectAll().orderBy('position').orderBy('id').execute();
  return {
    os_templates: templates.map((t) => ({
      id: t.id,
      name: t.name,
      image: t.image,
      ...(t.retired ? { retired: true } : {}),
    })),
    products: products.map((p) => ({
      id: p.id,
      name: p.name,
      template: p.template,
      config: JSON.parse(p.config),
      os_templates: links.filter((l) => l.product_id === p.id).map((l) => l.template_id),
      plans: plans
        .filter((pl) => pl.product_id === p.id)
        .map((pl) => ({
          id: pl.id,
          name: pl.name,
          cpu: pl.cpu,
          ram: pl.ram,
          hdd: pl.hdd,
          price: pl.price,
          ...(pl.retired ? { retired: true } : {}),
        })),
      ...(p.traffic_gb !== null ? { traffic_gb: p.traffic_gb, traffic_over: p.traffic_over } : {}),
      ...(p.retired ? { retired: true } : {}),
    })),
  };
}
