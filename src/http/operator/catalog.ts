import type { FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import type { CatalogFile } from '../../domain/catalog-file.ts';
import { type CatalogChange, catalogUse, changeCatalog } from '../../store/catalog-admin.ts';
import { exportCatalog } from '../../store/catalog-import.ts';
import { answerMessage } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { pathId } from '../path-id.ts';
import { auditContext } from '../plugins/audit.ts';
import { EmptyList, InputId } from '../schemas/common.ts';
import {
  CatalogPlanPayload,
  CatalogProductPayload,
  CatalogTemplatePayload,
  NewPlanBody,
  NewProductBody,
  NewTemplateBody,
  PlanChangeBody,
  ProductChangeBody,
  TemplateChangeBody,
} from '../schemas/operator.ts';
import { operatorRoute } from './operator-route.ts';

type Use = Awaited<ReturnType<typeof catalogUse>>;
type FileProduct = CatalogFile['products'][number];

function planView(productId: string, pl: FileProduct['plans'][number]): Static<typeof CatalogPlanPayload> {
  return {
    id: pl.id,
    product_id: productId,
    name: pl.name,
    cpu: pl.cpu,
    ram: pl.ram,
    hdd: pl.hdd,
    price: pl.price,
    retired: pl.retired === true,
  };
}

function productView(p: FileProduct, use: Use): Static<typeof CatalogProductPayload> {
  return {
    id: p.id,
    name: p.name,
    template: p.template,
    config: { ...p.config },
    os_templates: [...p.os_templates],
    plans: p.plans.map((pl) => planView(p.id, pl)),
    traffic_gb: p.traffic_gb ?? null,
    traffic_over: p.traffic_over ?? null,
    retired: p.retired === true,
    services: use.byProduct.get(p.id) ?? 0,
  };
}

function templateView(
  t: CatalogFile['os_templates'][number],
  file: CatalogFile,
  use: Use,
): Static<typeof CatalogTemplatePayload> {
  return {
    id: t.id,
    name: t.name,
    image: t.image ?? null,
    retired: t.retired === true,
    services: use.byTemplate.get(t.id) ?? 0,
    products: file.products.filter((p) => p.os_templates.includes(t.id)).map((p) => p.id),
  };
}

const ProductIdParams = Type.Object({ product_id: InputId('The product') });
const PlanIdParams = Type.Object({ plan_id: InputId('The plan') });
const TemplateIdParams = Type.Object({ template_id: InputId('The OS template') });

const tags = ['Catalogue'];
const RULES =
  'Fields and rules are the catalogue file’s (docs/catalog.md): a body breaking one is 400 `validation_failed` naming every problem.';
const SHOWN = 'Running servers show the change within 5 seconds.';

/**
 * `OPS/products`, `OPS/plans`, `OPS/os-templates`: the catalogue item by item (list with the
 * retired ones, create, change, retire and un-retire, remove when unused), each change made by
 * store/catalog-admin.ts as an import of the whole catalogue would be (docs/operator-api.md#catalogue).
 */
export function registerCatalogRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  /** Applies a change; the reseller API of this process sees it at once, the others within the cache's age. */
  async function apply(request: FastifyRequest, change: CatalogChange) {
    const done = await changeCatalog(db, change, ctx.clock.now(), auditContext(request));
    ctx.catalog.invalidate();
    return { ...done, use: await catalogUse(db) };
  }
  const productOf = (catalog: CatalogFile, id: string, use: Use) => {
    const p = catalog.products.find((x) => x.id === id);
    if (!p) throw new Error(`product ${id} is missing after its change`);
    return productView(p, use);
  };
  const planOf = (catalog: CatalogFile, id: string) => {
    for (const p of catalog.products) {
      const pl = p.plans.find((x) => x.id === id);
      if (pl) return planView(p.id, pl);
    }
    throw new Error(`plan ${id} is missing after its change`);
  };
  const templateOf = (catalog: CatalogFile, id: string, use: Use) => {
    const t = catalog.os_templates.find((x) => x.id === id);
    if (!t) throw new Error(`OS template ${id} is missing after its change`);
    return templateView(t, catalog, use);
  };

  app.get(
    `${OPS}/products`,
    operatorRoute({
      operationId: 'listCatalogProducts',
      tags,
      summary: 'List the products',
      description:
        'Every product in catalogue order with its plans, the retired ones too (`retired`), and how many services (not terminated) were made from each.',
      response: { 200: Type.Array(CatalogProductPayload) },
    }),
    async () => {
      const [catalog, use] = [await exportCatalog(db), await catalogUse(db)];
      return catalog.products.map((p) => productView(p, use));
    },
  );

  app.get(
    `${OPS}/os-templates`,
    operatorRoute({
      operationId: 'listCatalogTemplates',
      tags,
      summary: 'List the OS templates',
      description:
        'Every OS template by name, the retired ones too, with the products offering it and how many services (not terminated) use it.',
      response: { 200: Type.Array(CatalogTemplatePayload) },
    }),
    async () => {
      const [catalog, use] = [await exportCatalog(db), await catalogUse(db)];
      return catalog.os_templates.map((t) => templateView(t, catalog, use));
    },
  );

  app.post(
    `${OPS}/products`,
    operatorRoute(
      {
        operationId: 'createProduct',
        tags,
        summary: 'Add a product',
        description: `A product as in the catalogue file, with its plans (optional), placed last. ${RULES} ${SHOWN}`,
        body: NewProductBody,
        response: { 200: CatalogProductPayload },
      },
      'product.create',
    ),
    async (request) => {
      const { catalog, id, use } = await apply(request, { kind: 'product.create', fields: request.body });
      return productOf(catalog, id, use);
    },
  );

  app.patch(
    `${OPS}/products/:product_id`,
    operatorRoute(
      {
        operationId: 'updateProduct',
        tags,
        summary: 'Change a product',
        description: `The fields given replace the product’s; the others stay (plans have their own routes). A change that would leave a service made from it (not terminated) outside its bounds, or without its OS template among the product’s, is 409 \`invalidates_services\` naming the service, and nothing changes. ${RULES} ${SHOWN}`,
        params: ProductIdParams,
        body: ProductChangeBody,
        errorStatuses: [409],
        response: { 200: CatalogProductPayload },
      },
      'product.update',
    ),
    async (request) => {
      const id = pathId(request.params.product_id, 'product_not_found');
      const { catalog, use } = await apply(request, { kind: 'product.update', id, fields: request.body });
      return productOf(catalog, id, use);
    },
  );

  app.post(
    `${OPS}/products/:product_id/plans`,
    operatorRoute(
      {
        operationId: 'createPlan',
        tags,
        summary: 'Add a plan to a product',
        description: `A plan as in the catalogue file, placed last among the product’s. ${RULES}`,
        params: ProductIdParams,
        body: NewPlanBody,
        response: { 200: CatalogPlanPayload },
      },
      'plan.create',
    ),
    async (request) => {
      const productId = pathId(request.params.product_id, 'product_not_found');
      const { catalog, id } = await apply(request, { kind: 'plan.create', productId, fields: request.body });
      return planOf(catalog, id);
    },
  );

  app.patch(
    `${OPS}/plans/:plan_id`,
    operatorRoute(
      {
        operationId: 'updatePlan',
        tags,
        summary: 'Change a plan',
        description: `The fields given replace the plan’s. Services do not refer to plans (they keep their own amounts), so no change of a plan affects one. ${RULES}`,
        params: PlanIdParams,
        body: PlanChangeBody,
        response: { 200: CatalogPlanPayload },
      },
      'plan.update',
    ),
    async (request) => {
      const id = pathId(request.params.plan_id, 'plan_not_found');
      const { catalog } = await apply(request, { kind: 'plan.update', id, fields: request.body });
      return planOf(catalog, id);
    },
  );

  app.post(
    `${OPS}/os-templates`,
    operatorRoute(
      {
        operationId: 'createOsTemplate',
        tags,
        summary: 'Add an OS template',
        description: `An OS template as in the catalogue file; a product offers it once its \`os_templates\` names it. ${RULES}`,
        body: NewTemplateBody,
        response: { 200: CatalogTemplatePayload },
      },
      'os_template.create',
    ),
    async (request) => {
      const { catalog, id, use } = await apply(request, { kind: 'os_template.create', fields: request.body });
      return templateOf(catalog, id, use);
    },
  );

  app.patch(
    `${OPS}/os-templates/:template_id`,
    operatorRoute(
      {
        operationId: 'updateOsTemplate',
        tags,
        summary: 'Change an OS template',
        description: `The fields given replace the template’s. ${RULES} ${SHOWN}`,
        params: TemplateIdParams,
        body: TemplateChangeBody,
        response: { 200: CatalogTemplatePayload },
      },
      'os_template.update',
    ),
    async (request) => {
      const id = pathId(request.params.template_id, 'template_not_found');
      const { catalog, use } = await apply(request, { kind: 'os_template.update', id, fields: request.body });
      return templateOf(catalog, id, use);
    },
  );

  for (const retire of [true, false]) {
    const verb = retire ? 'retire' : 'unretire';
    const what = retire
      ? 'No longer offered to resellers (not listed, not orderable; a retired template is refused for reinstalls too), while the services made from it keep their status, details and upgrades.'
      : 'Offered again.';
    app.post(
      `${OPS}/products/:product_id/${verb}`,
      operatorRoute(
        {
          operationId: `${verb}Product`,
          tags,
          summary: retire ? 'Retire a product' : 'Offer a retired product again',
          description: `${what} ${SHOWN}`,
          params: ProductIdParams,
          response: { 200: CatalogProductPayload },
        },
        `product.${verb}`,
      ),
      async (request) => {
        const id = pathId(request.params.product_id, 'product_not_found');
        const change = { kind: 'product.update', id, fields: { retired: retire } } as const;
        const { catalog, use } = await apply(request, change);
        return productOf(catalog, id, use);
      },
    );
    app.post(
      `${OPS}/plans/:plan_id/${verb}`,
      operatorRoute(
        {
          operationId: `${verb}Plan`,
          tags,
          summary: retire ? 'Retire a plan' : 'List a retired plan again',
          description: retire ? 'No longer listed to resellers.' : 'Listed again.',
          params: PlanIdParams,
          response: { 200: CatalogPlanPayload },
        },
        `plan.${verb}`,
      ),
      async (request) => {
        const id = pathId(request.params.plan_id, 'plan_not_found');
        const { catalog } = await apply(request, { kind: 'plan.update', id, fields: { retired: retire } });
        return planOf(catalog, id);
      },
    );
    app.post(
      `${OPS}/os-templates/:template_id/${verb}`,
      operatorRoute(
        {
          operationId: `${verb}OsTemplate`,
          tags,
          summary: retire ? 'Retire an OS template' : 'Offer a retired OS template again',
          description: `${what} ${SHOWN}`,
          params: TemplateIdParams,
          response: { 200: CatalogTemplatePayload },
        },
        `os_template.${verb}`,
      ),
      async (request) => {
        const id = pathId(request.params.template_id, 'template_not_found');
        const change = { kind: 'os_template.update', id, fields: { retired: retire } } as const;
        const { catalog, use } = await apply(request, change);
        return templateOf(catalog, id, use);
      },
    );
  }

  const removals = [
    {
      path: 'products/:product_id',
      param: 'product_id',
      kind: 'product.delete',
      code: 'product_not_found',
      operationId: 'deleteProduct',
      summary: 'Remove a product',
      description:
        'Removes the product and its plans. A product any service was made from (terminated ones too: usage and history name it) is 409 `product_in_use`: retire it instead.',
      message: 'Product removed',
    },
    {
      path: 'plans/:plan_id',
      param: 'plan_id',
      kind: 'plan.delete',
      code: 'plan_not_found',
      operationId: 'deletePlan',
      summary: 'Remove a plan',
      description: 'Removes the plan (services keep their own amounts).',
      message: 'Plan removed',
    },
    {
      path: 'os-templates/:template_id',
      param: 'template_id',
      kind: 'os_template.delete',
      code: 'template_not_found',
      operationId: 'deleteOsTemplate',
      summary: 'Remove an OS template',
      description:
        'A template a product offers, or any service uses (terminated ones too), is 409 `template_in_use`: take it out of the products, or retire it.',
      message: 'OS template removed',
    },
  ] as const;
  for (const r of removals) {
    app.post(
      `${OPS}/${r.path}/delete`,
      operatorRoute(
        {
          operationId: r.operationId,
          tags,
          summary: r.summary,
          description: r.description,
          params: Type.Object({ [r.param]: InputId('The item') }),
          errorStatuses: [409],
          response: { 200: EmptyList },
        },
        r.kind,
      ),
      async (request, reply) => {
        const params: Record<string, string> = request.params;
        const id = pathId(params[r.param] ?? '', r.code);
        await apply(request, { kind: r.kind, id });
        answerMessage(reply, r.message);
        return [];
      },
    );
  }
}
