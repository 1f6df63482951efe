import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { RESOURCES } from '../domain/catalog.ts';
import { type CatalogFile, CatalogFileError, parseCatalogFile } from '../domain/catalog-file.ts';
import { ApiError } from '../domain/errors.ts';
import { applyCatalog, exportCatalog, lockCatalog } from './catalog-import.ts';
import { type AuditContext, recordAudit } from './repos/audit.ts';
import type { Database } from './schema.ts';

/**
 * The catalogue changed one item at a time (the operator API and the console): each change is
 * made to the catalogue as its file (`vrp catalog export`), the whole is checked with the file's
 * own rules (domain/catalog-file.ts: one rule in one place), then against the services made from
 * it, then applied as an import is; in one transaction, so a refusal changes nothing.
 */

type Item = Record<string, unknown>;
const isItem = (v: unknown): v is Item => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The catalogue file being edited: items as plain objects, so a body's fields go in as given. */
interface Draft {
  readonly os_templates: Item[];
  /** Plans as given (a new product's may be anything), checked by the file's rules. */
  readonly products: { item: Item; plans: unknown[] }[];
}

/** What an edit did: the item's path in the file (so problems are named from it) and its id. */
interface Edited {
  readonly path: string;
  readonly target: { readonly type: 'product' | 'plan' | 'os_template'; readonly id: string };
}

export type ProductFile = CatalogFile['products'][number];
export type PlanFile = ProductFile['plans'][number];
export type TemplateFile = CatalogFile['os_templates'][number];

function draftOf(file: CatalogFile): Draft {
  return {
    os_templates: file.os_templates.map((t) => ({ ...t })),
    products: file.products.map(({ plans, ...p }) => ({
      item: { ...p },
      plans: plans.map((pl) => ({ ...pl })),
    })),
  };
}

const inputOf = (d: Draft) => ({
  os_templates: d.os_templates,
  products: d.products.map((p) => ({ ...p.item, plans: p.plans })),
});

/** The fields given, over `item`: absent ones stay. */
function merge(item: Item, fields: Item): void {
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) item[k] = v;
}

/** `products[2].config.cpu.max must be >= min` is `config.cpu.max must be >= min` to whom changes products[2]. */
function relative(problem: string, path: string): string {
  return problem.startsWith(`${path}.`) ? problem.slice(path.length + 1) : problem;
}

function productAt(d: Draft, id: string): { index: number; product: Draft['products'][number] } {
  const index = d.products.findIndex((p) => p.item['id'] === id);
  const product = d.products[index];
  if (!product) throw new ApiError('product_not_found', 'Product not found');
  return { index, product };
}

function planAt(d: Draft, id: string): { path: string; plans: unknown[]; index: number; plan: Item } {
  for (const [i, p] of d.products.entries()) {
    const index = p.plans.findIndex((pl) => isItem(pl) && pl['id'] === id);
    const plan = p.plans[index];
    if (isItem(plan)) return { path: `products[${i}].plans[${index}]`, plans: p.plans, index, plan };
  }
  throw new ApiError('plan_not_found', 'Plan not found');
}

function templateAt(d: Draft, id: string): { index: number; template: Item } {
  const index = d.os_templates.findIndex((t) => t['id'] === id);
  const template = d.os_templates[index];
  if (!template) throw new ApiError('template_not_found', 'OS template not found');
  return { index, template };
}

/** An id given in a body, lower case (the file's rule checks it is a UUID), or a new one. */
const idOf = (fields: Item): unknown =>
  typeof fields['id'] === 'string' ? fields['id'].toLowerCase() : (fields['id'] ?? randomUUID());

/** One change to the catalogue, as the operator API names them. */
export type CatalogChange =
  | { readonly kind: 'product.create'; readonly fields: Item }
  | { readonly kind: 'product.update'; readonly id: string; readonly fields: Item }
  | { readonly kind: 'product.delete'; readonly id: string }
  | { readonly kind: 'plan.create'; readonly productId: string; readonly fields: Item }
  | { readonly kind: 'plan.update'; readonly id: string; readonly fields: Item }
  | { readonly kind: 'plan.delete'; readonly id: string }
  | { readonly kind: 'os_template.create'; readonly fields: Item }
  | { readonly kind: 'os_template.update'; readonly id: string; readonly fields: Item }
  | { readonly kind: 'os_template.delete'; readonly id: string };

function edit(d: Draft, change: CatalogChange): Edited {
  switch (change.kind) {
    case 'product.create': {
      const { plans, ...fields } = change.fields;
      if (plans !== undefined && !Array.isArray(plans))
        throw new ApiError('validation_failed', 'The product is not valid: plans must be an array');
      const id = idOf(fields);
      const withIds = (plans ?? []).map((pl: unknown) => (isItem(pl) ? { ...pl, id: idOf(pl) } : pl));
      d.products.push({ item: { ...fields, id }, plans: withIds });
      return { path: `products[${d.products.length - 1}]`, target: { type: 'product', id: String(id) } };
    }
    case 'product.update': {
      const { index, product } = productAt(d, change.id);
      merge(product.item, change.fields);
      return { path: `products[${index}]`, target: { type: 'product', id: change.id } };
    }
    case 'product.delete': {
      const { index } = productAt(d, change.id);
      d.products.splice(index, 1);
      return { path: `products[${index}]`, target: { type: 'product', id: change.id } };
    }
    case 'plan.create': {
      const { index, product } = productAt(d, change.productId);
      const id = idOf(change.fields);
      product.plans.push({ ...change.fields, id });
      return {
        path: `products[${index}].plans[${product.plans.length - 1}]`,
        target: { type: 'plan', id: String(id) },
      };
    }
    case 'plan.update': {
      const { path, plan } = planAt(d, change.id);
      merge(plan, change.fields);
      return { path, target: { type: 'plan', id: change.id } };
    }
    case 'plan.delete': {
      const { path, plans, index } = planAt(d, change.id);
      plans.splice(index, 1);
      return { path, target: { type: 'plan', id: change.id } };
    }
    case 'os_template.create': {
      const id = idOf(change.fields);
      d.os_templates.push({ ...change.fields, id });
      return {
        path: `os_templates[${d.os_templates.length - 1}]`,
        target: { type: 'os_template', id: String(id) },
      };
    }
    case 'os_template.update': {
      const { index, template } = templateAt(d, change.id);
      merge(template, change.fields);
      return { path: `os_templates[${index}]`, target: { type: 'os_template', id: change.id } };
    }
    case 'os_template.delete': {
      const { index } = templateAt(d, change.id);
      d.os_templates.splice(index, 1);
      return { path: `os_templates[${index}]`, target: { type: 'os_template', id: change.id } };
    }
  }
}

/**
 * Applies `change` with its audit entry, or refuses it with nothing changed: 404 for an id that
 * names nothing, 400 `validation_failed` listing what breaks the file's rules, 409
 * `product_in_use` / `template_in_use` for the removal of what services (or products) use, 409
 * `invalidates_services` for a change that would leave a service outside its product. Returns
 * the catalogue after the change. The caller drops its cached catalogue.
 */
export async function changeCatalog(
  db: Kysely<Database>,
  change: CatalogChange,
  now: number,
  audit: AuditContext,
): Promise<{ readonly catalog: CatalogFile; readonly id: string }> {
  return db.transaction().execute(async (tx) => {
    // One change at a time: each reads the whole catalogue and writes it back.
    await lockCatalog(tx, now);
    const before = await exportCatalog(tx);
    const draft = draftOf(before);
    const { path, target } = edit(draft, change);
    await checkRemovals(tx, before, draft, target);
    let after: CatalogFile;
    try {
      after = parseCatalogFile(inputOf(draft));
    } catch (err) {
      if (!(err instanceof CatalogFileError)) throw err;
      const problems = err.problems.map((p) => relative(p, path));
      throw new ApiError(
        'validation_failed',
        `The ${target.type.replace('_', ' ')} is not valid: ${problems.join('; ')}`,
      );
    }
    await checkServices(tx, before, after);
    await applyCatalog(tx, after, now);
    await recordAudit(tx, audit, { target }, now);
    return { catalog: after, id: target.id };
  });
}

/** A product a service was made from (terminated ones too: usage and history name it) or a template one uses or a product offers stays. */
async function checkRemovals(
  tx: Transaction<Database>,
  before: CatalogFile,
  draft: Draft,
  target: Edited['target'],
): Promise<void> {
  if (target.type === 'product' && !draft.products.some((p) => p.item['id'] === target.id)) {
    const used = await tx
      .selectFrom('services')
      .select('id')
      .where('product_id', '=', target.id)
      .limit(1)
      .executeTakeFirst();
    if (used)
      throw new ApiError(
        'product_in_use',
        `Services were made from this product (service ${used.id}, for one): retire it instead`,
      );
  }
  if (target.type === 'os_template' && !draft.os_templates.some((t) => t['id'] === target.id)) {
    const offering = before.products.find((p) => p.os_templates.includes(target.id));
    if (offering)
      throw new ApiError(
        'template_in_use',
        `Product "${offering.name}" offers this OS template: take it out of the product first, or retire the template`,
      );
    const used = await tx
      .selectFrom('services')
      .select('id')
      .where('template_id', '=', target.id)
      .limit(1)
      .executeTakeFirst();
    if (used)
      throw new ApiError(
        'template_in_use',
        `Services use this OS template (service ${used.id}, for one): retire it instead`,
      );
  }
}

const COLUMN = { ram: 'ram', ip: 'ip_count', cpu: 'cpu', hdd: 'hdd', backup: 'backup' } as const;

/**
 * A product whose bounds or OS templates change must still hold every service made from it that
 * is not terminated: its amounts within the bounds (an upgrade must name amounts within them, so
 * the service could never be upgraded again), its template among the product's.
 */
async function checkServices(
  tx: Transaction<Database>,
  before: CatalogFile,
  after: CatalogFile,
): Promise<void> {
  for (const p of after.products) {
    const old = before.products.find((b) => b.id === p.id);
    if (!old) continue;
    const boundsChanged = RESOURCES.some(
      (r) => old.config[r].min !== p.config[r].min || old.config[r].max !== p.config[r].max,
    );
    const templatesDropped = old.os_templates.some((t) => !p.os_templates.includes(t));
    if (!boundsChanged && !templatesDropped) continue;
    const outside = await tx
      .selectFrom('services')
      .select(['id', 'domain_name', 'template_id', 'cpu', 'ram', 'hdd', 'ip_count', 'backup'])
      .where('product_id', '=', p.id)
      .where('status', '!=', 'terminated')
      .where((eb) =>
        eb.or([
          ...RESOURCES.flatMap((r) => [
            eb(COLUMN[r], '<', p.config[r].min),
            eb(COLUMN[r], '>', p.config[r].max),
          ]),
          eb('template_id', 'not in', p.os_templates),
        ]),
      )
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    if (!outside) continue;
    const resource = RESOURCES.find(
      (r) => outside[COLUMN[r]] < p.config[r].min || outside[COLUMN[r]] > p.config[r].max,
    );
    const why =
      resource === undefined
        ? `its OS template ${outside.template_id} would no longer be the product's`
        : `its ${resource} ${outside[COLUMN[resource]]} would be outside ${p.config[resource].min}..${p.config[resource].max}`;
    throw new ApiError(
      'invalidates_services',
      `The change would make service ${outside.id} (${outside.domain_name}) invalid: ${why}; nothing was changed`,
    );
  }
}

/** How many services that are not terminated each product and each OS template has. */
export async function catalogUse(
  db: Kysely<Database>,
): Promise<{ byProduct: ReadonlyMap<string, number>; byTemplate: ReadonlyMap<string, number> }> {
  const rows = await db
    .selectFrom('services')
    .select((eb) => ['product_id', 'template_id', eb.fn.countAll<number | string>().as('n')])
    .where('status', '!=', 'terminated')
    .groupBy(['product_id', 'template_id'])
    .execute();
  const byProduct = new Map<string, number>();
  const byTemplate = new Map<string, number>();
  for (const r of rows) {
    byProduct.set(r.product_id, (byProduct.get(r.product_id) ?? 0) + Number(r.n));
    byTemplate.set(r.template_id, (byTemplate.get(r.template_id) ?? 0) + Number(r.n));
  }
  return { byProduct, byTemplate };
}
