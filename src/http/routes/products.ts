import type { AppContext } from '../../context.ts';
import { planView, productView } from '../../domain/catalog.ts';
import { ApiError } from '../../domain/errors.ts';
import type { App } from '../app.ts';
import { API } from '../base-path.ts';
import { successEnvelope } from '../envelope.ts';
import { EmptyBody, isUuid, ProductParams } from '../schemas.ts';

export function registerProductRoutes(app: App, ctx: AppContext): void {
  const list = async (request: { variant: 'A' | 'B' }) => {
    const catalog = await ctx.catalog.get();
    return successEnvelope(request.variant, catalog.products.map(productView));
  };
  // Variant B lists products with GET, variant A with POST: both are served.
  app.get(`${API}/products`, { config: { scope: 'products' } }, list);
  app.post(`${API}/products`, { config: { scope: 'products' }, schema: { body: EmptyBody } }, list);

  app.get(
    `${API}/product/:product_uuid/plans`,
    { config: { scope: 'products' }, schema: { params: ProductParams } },
    async (request) => {
      const id = request.params.product_uuid;
      const catalog = await ctx.catalog.get();
      if (!isUuid(id) || !catalog.byId.has(id.toLowerCase())) {
        throw new ApiError('product_not_found', 'Product not found');
      }
      const plans = catalog.plansByProduct.get(id.toLowerCase()) ?? [];
      return successEnvelope(request.variant, { default_plans: plans.map(planView) });
    },
  );
}
