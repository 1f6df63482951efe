import type { Kysely } from 'kysely';
import type { Product, ProductConfig } from '../../domain/catalog.ts';
import type { Database } from '../schema.ts';

/** All products with their OS templates, in catalogue order. */
export async function listProducts(db: Kysely<Database>): Promise<Product[]> {
  const [products, links] = await Promise.all([
    db.selectFrom('products').selectAll().orderBy('position').orderBy('name').execute(),
    db
      .selectFrom('product_templates')
      .innerJoin('os_templates', 'os_templates.id', 'product_templates.template_id')
      .select([
        'product_templates.product_id',
        'os_templates.id',
        'os_templates.name',
        'os_templates.retired',
      ])
      .orderBy('product_templates.position')
      .orderBy('os_templates.name')
      .execute(),
  ]);
  return products.map((p) => ({
    id: p.id,
    name: p.name,
    template: p.template,
    config: JSON.parse(p.config) as ProductConfig,
    osTemplates: links
      .filter((l) => l.product_id === p.id)
      .map((l) => ({ templateId: l.id, name: l.name, retired: l.retired === 1 })),
    trafficGb: p.traffic_gb,
    trafficOver: p.traffic_over,
    retired: p.retired === 1,
  }));
}

export async function countProducts(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('products')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
