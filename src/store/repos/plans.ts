import type { Kysely } from 'kysely';
import type { Plan } from '../../domain/catalog.ts';
import type { Database } from '../schema.ts';

export async function listPlans(db: Kysely<Database>, productId?: string): Promise<Plan[]> {
  let q = db.selectFrom('plans').selectAll();
  if (productId) q = q.where('product_id', '=', productId);
  const rows = await q.orderBy('product_id').orderBy('position').orderBy('name').execute();
  return rows.map((r) => ({
    id: r.id,
    productId: r.product_id,
    name: r.name,
    cpu: r.cpu,
    ram: r.ram,
    hdd: r.hdd,
    price: r.price,
    retired: r.retired === 1,
  }));
}
