import type { Kysely } from 'kysely';
import type { Plan, Product } from '../domain/catalog.ts';
import { listPlans } from './repos/plans.ts';
import { listProducts } from './repos/products.ts';
import type { Database } from './schema.ts';

/** How long a process serves the catalogue from memory; an import shows on every process within it. */
const CATALOG_TTL_MS = 5000;

export interface Catalog {
  readonly products: readonly Product[];
  readonly byId: ReadonlyMap<string, Product>;
  readonly plansByProduct: ReadonlyMap<string, readonly Plan[]>;
  /** OS templates no VM can be created from (no image, with a driver that needs one): not orderable. */
  readonly unavailableTemplates: ReadonlySet<string>;
}

export interface CatalogCacheOptions {
  readonly ttlMs?: number;
  /** The driver in use boots VMs from each template's image (libvirt), so one without is unavailable. */
  readonly templatesNeedImages?: boolean;
}

export interface CatalogCache {
  get(): Promise<Catalog>;
  invalidate(): void;
}

/** The catalogue changes rarely (an operator's import) and is read on every products and order request. */
export function createCatalogCache(
  db: Kysely<Database>,
  now: () => number,
  options: CatalogCacheOptions = {},
): CatalogCache {
  const ttlMs = options.ttlMs ?? CATALOG_TTL_MS;
  let cached: { catalog: Catalog; until: number } | undefined;
  let inflight: Promise<Catalog> | undefined;
  const load = async (): Promise<Catalog> => {
    const [products, plans, imageless] = await Promise.all([
      listProducts(db),
      listPlans(db),
      options.templatesNeedImages
        ? db.selectFrom('os_templates').select('id').where('image', 'is', null).execute()
        : [],
    ]);
    const plansByProduct = new Map<string, Plan[]>();
    for (const p of plans) {
      const list = plansByProduct.get(p.productId) ?? [];
      list.push(p);
      plansByProduct.set(p.productId, list);
    }
    return {
      products,
      byId: new Map(products.map((p) => [p.id, p])),
      plansByProduct,
      unavailableTemplates: new Set(imageless.map((t) => t.id)),
    };
  };
  return {
    async get() {
      const t = now();
      if (cached && cached.until > t) return cached.catalog;
      inflight ??= load().finally(() => {
        inflight = undefined;
      });
      const catalog = await inflight;
      cached = { catalog, until: t + ttlMs };
      return catalog;
    },
    invalidate() {
      cached = undefined;
    },
  };
}
