import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { planView, productView, RESOURCES } from '../../domain/catalog.ts';
import type { Catalog } from '../../store/catalog-cache.ts';
import { type ApiHandler, apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API } from '../base-path.ts';
import { notFound, pathId } from '../path-id.ts';
import { EmptyBody, Id, ProductParams, type SameKeys } from '../schemas/common.ts';

/** Bounds as numeric strings with their unit (section 2.2 of the interface document). */
const Bounds = Type.Object(
  {
    min: Type.String({ pattern: '^[0-9]+$', description: 'The smallest amount an order may have' }),
    max: Type.String({ pattern: '^[0-9]+$', description: 'The largest amount an order may have' }),
    unit: Type.String({ examples: ['GB', 'vCore', 'IP'] }),
  },
  { title: 'Bounds' },
);

const ProductPayload = Type.Object(
  {
    id: Id('The product, as `product_id` of an order'),
    name: Type.String(),
    template: Type.String({ description: 'The kind of virtual server the product is' }),
    // Each resource, in the order productView writes them.
    config: Type.Object(Object.fromEntries(RESOURCES.map((r) => [r, Bounds])), {
      description: 'The bounds of each amount an order or upgrade of this product may ask for',
    }),
    os_templates: Type.Array(
      Type.Object({ template_id: Id('As `template_id` of an order'), name: Type.String() }),
    ),
  },
  { title: 'Product' },
);

const ProductList = Type.Array(ProductPayload);

const PlanPayload = Type.Object(
  {
    uuid: Id(),
    name: Type.String(),
    cpu: Type.Integer(),
    ram: Type.Integer(),
    hdd: Type.Integer(),
    price: Type.Number(),
  },
  { title: 'Plan' },
);

// The views live in the domain; a field they write that a schema lacks would vanish from answers.
const productKeys: SameKeys<ReturnType<typeof productView>, Static<typeof ProductPayload>> = true;
const planKeys: SameKeys<ReturnType<typeof planView>, Static<typeof PlanPayload>> = true;
void [productKeys, planKeys];

export function registerProductRoutes(app: App, ctx: AppContext): void {
  // Retired products are no longer offered; their services keep working. The list is the same
  // for every caller until the catalogue changes (its cache then hands out a new object), so it
  // is made and serialized (by the route's own response serializer) once per catalogue.
  const made = new WeakMap<Catalog, { readonly list: Static<typeof ProductList>; readonly text: string }>();
  const list: ApiHandler<{ response: { 200: typeof ProductList } }> = async (_request, reply) => {
    const catalog = await ctx.catalog.get();
    let m = made.get(catalog);
    if (m === undefined) {
      const views = catalog.products.filter((p) => !p.retired).map(productView);
      const text = reply.serialize(views);
      m = { list: views, text: typeof text === 'string' ? text : new TextDecoder().decode(text) };
      made.set(catalog, m);
    }
    const text = m.text;
    // The text made before is this reply's serialization (the envelope goes around it: api-route.ts).
    reply.type('application/json; charset=utf-8').serializer(() => text);
    return m.list;
  };
  const products = {
    tags: ['Products'],
    summary: 'List the products',
    response: { 200: ProductList },
  };
  // Variant B lists products with GET, variant A with POST: both are served.
  app.get(
    `${API}/products`,
    apiRoute('products', {
      ...products,
      operationId: 'products',
      description: 'Every product on offer, with the bounds of its amounts and its OS templates.',
    }),
    list,
  );
  app.post(
    `${API}/products`,
    apiRoute('products', {
      ...products,
      operationId: 'productsPost',
      description: 'The same as `GET`, as variant A of the interface sends it.',
      body: EmptyBody,
    }),
    list,
  );

  app.get(
    `${API}/product/:product_uuid/plans`,
    apiRoute('products', {
      operationId: 'plans',
      tags: ['Products'],
      summary: 'List the default plans of a product',
      description: 'Ready-made amounts within the product’s bounds, with their price.',
      params: ProductParams,
      response: { 200: Type.Object({ default_plans: Type.Array(PlanPayload) }) },
    }),
    async (request) => {
      const catalog = await ctx.catalog.get();
      const id = pathId(request.params.product_uuid, 'product_not_found');
      const product = catalog.byId.get(id);
      if (!product || product.retired) throw notFound('product_not_found');
      const plans = catalog.plansByProduct.get(id) ?? [];
      return { default_plans: plans.filter((p) => !p.retired).map(planView) };
    },
  );
}
