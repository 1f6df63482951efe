import type { Kysely } from 'kysely';
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
    const removed: string[] = [];
    const kept: string[] = [];
    for (const t of file.os_templates) {
      await tx
        .insertInto('os_templates')
        .values({ id: t.id, name: t.name, image: t.image ?? null, created_at: now, updated_at: now })
        .onConflict((oc) =>
          oc.column('id').doUpdateSet({ name: t.name, image: t.image ?? null, updated_at: now }),
        )
        .execute();
    }
    for (const [i, p] of file.products.entries()) {
      const config = JSON.stringify(p.config);
      await tx
        .insertInto('products')
        .values({
          id: p.id,
          name: p.name,
          template: p.template,
          config,
          position: i,
          created_at: now,
          updated_at: now,
        })
        .onConflict((oc) =>
          oc
            .column('id')
            .doUpdateSet({ name: p.name, template: p.template, config, position: i, updated_at: now }),
        )
        .execute();
      await tx.deleteFrom('product_templates').where('product_id', '=', p.id).execute();
      for (const [j, templateId] of p.os_templates.entries()) {
        await tx
          .insertInto('product_templates')
          .values({ product_id: p.id, template_id: templateId, position: j })
          .execute();
      }
      await tx.deleteFrom('plans').where('product_id', '=', p.id).execute();
      for (const [j, plan] of p.plans.entries()) {
        await tx
          .insertInto('plans')
          .values({ ...plan, product_id: p.id, position: j })
          .execute();
      }
    }
    const productIds = file.products.map((p) => p.id);
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
  });
}

/** The catalogue as a file: what `importCatalog` takes back unchanged. */
export async function exportCatalog(db: Kysely<Database>): Promise<CatalogFile> {
  const [templates, products, links, plans] = await Promise.all([
    db.selectFrom('os_templates').selectAll().orderBy('name').orderBy('id').execute(),
    db.selectFrom('products').selectAll().orderBy('position').orderBy('id').execute(),
    db.selectFrom('product_templates').selectAll().orderBy('position').execute(),
    db.selectFrom('plans').selectAll().orderBy('position').orderBy('id').execute(),
  ]);
  return {
    os_templates: templates.map((t) => ({ id: t.id, name: t.name, image: t.image })),
    products: products.map((p) => ({
      id: p.id,
      name: p.name,
      template: p.template,
      config: JSON.parse(p.config),
      os_templates: links.filter((l) => l.product_id === p.id).map((l) => l.template_id),
      plans: plans
        .filter((pl) => pl.product_id === p.id)
        .map((pl) => ({ id: pl.id, name: pl.name, cpu: pl.cpu, ram: pl.ram, hdd: pl.hdd, price: pl.price })),
    })),
  };
}
