import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { planView, productView, RESOURCES } from '../../domain/catalog.ts';
import { ApiError } from '../../domain/errors.ts';
import { apiRoute } from '../api-route.ts';
import type { App } from '../app.ts';
import { API } from '../base-path.ts';
import { EmptyBody, isUuid, ProductParams, type SameKeys } from '../schemas.ts';

/** Bounds as numeric strings with their unit (section 2.2 of the interface document). */
const Bounds = Type.Object({ min: Type.String(), max: Type.String(), unit: Type.String() });

const ProductPayload = Type.Object({
  id: Type.String(),
  name: Type.String(),
  template: Type.String(),
  // Each resource, in the order productView writes them.
  config: Type.Object(Object.fromEntries(RESOURCES.map((r) => [r, Bounds]))),
  os_templates: Type.Array(Type.Object({ template_id: Type.String(), name: Type.String() })),
});

const PlanPayload = Type.Object({
  uuid: Type.String(),
  name: Type.String(),
  cpu: Type.Integer(),
  ram: Type.Integer(),
  hdd: Type.Integer(),
  price: Type.Number(),
});

// The views live in the domain; a field they write that a schema lacks would vanish from answers.
const productKeys: SameKeys<ReturnType<typeof productView>, Static<typeof ProductPayload>> = true;
const planKeys: SameKeys<ReturnType<typeof planView>, Static<typeof PlanPayload>> = true;
void [productKeys, planKeys];

export function registerProductRoutes(app: App, ctx: AppContext): void {
  const list = async () => (await ctx.catalog.get()).products.map(productView);
  const products = { response: { 200: Type.Array(ProductPayload) } };
  // Variant B lists products with GET, variant A with POST: both are served.
  app.get(`${API}/products`, apiRoute('products', products), list);
  app.post(`${API}/products`, apiRoute('products', { ...products, body: EmptyBody }), list);

  app.get(
    `${API}/product/:product_uuid/plans`,
    apiRoute('products', {
      params: ProductParams,
      response: { 200: Type.Object({ default_plans: Type.Array(PlanPayload) }) },
    }),
    async (request) => {
      const id = request.params.product_uuid;
      const catalog = await ctx.catalog.get();
      if (!isUuid(id) || !catalog.byId.has(id.toLowerCase())) {
        throw new ApiError('product_not_found', 'Product not found');
      }
      const plans = catalog.plansByProduct.get(id.toLowerCase()) ?? [];
      return { default_plans: plans.map(planView) };
    },
  );
}
