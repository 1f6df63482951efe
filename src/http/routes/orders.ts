import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import { checkOrder } from '../../domain/orders.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { createOrderPlacer, type PlacedOrder } from '../../store/place-order.ts';
import { findIdempotencyKey } from '../../store/repos/idempotency-keys.ts';
import { findService } from '../../store/repos/services.ts';
import { type ApiHandler, apiRoute } from '../api-route.ts';
import type { App } from '../app.ts';
import { API, BASE } from '../base-path.ts';
import { ByVariant } from '../schemas.ts';

const Amount = Type.Integer({ minimum: 0, maximum: 1_000_000 });

export const OrderBody = Type.Object({
  product_id: Type.String({ maxLength: 64 }),
  domain_name: Type.String({ minLength: 1, maxLength: 253 }),
  template_id: Type.String({ maxLength: 64 }),
  cpu: Amount,
  ram: Amount,
  hdd: Amount,
  ip: Amount,
  backup: Amount,
});
type Order = Static<typeof OrderBody>;

/** The answer to an order differs by variant (CONTRACT.md section 3): A also carries the new server's login. */
const OrderPayload = ByVariant({
  A: Type.Object({ service_id: Type.String(), username: Type.String(), password: Type.String() }),
  B: Type.Array(Type.Object({ service_id: Type.String() })),
});

const OrderSchema = { body: OrderBody, response: { 200: OrderPayload } };

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

function requestHash(order: Order): string {
  const canonical = JSON.stringify(
    Object.keys(order)
      .sort()
      .map((k) => [k, order[k as keyof Order]]),
  );
  return createHash('sha256').update(canonical).digest('hex');
}

export function registerOrderRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  const orders = createOrderPlacer(ctx.store, ctx.secretBox);

  /** The answer to an order: variant A also carries the new server's login. */
  function answer(
    request: FastifyRequest,
    service: { id: string; username: string; password: string },
  ): Static<typeof OrderPayload> {
    return request.variant === 'A'
      ? { service_id: service.id, username: service.username, password: service.password }
      : [{ service_id: service.id }];
  }

  /** The answer again, for a replayed order, from the service as stored. */
  async function respond(request: FastifyRequest, serviceId: string) {
    const service = await findService(db, serviceId);
    if (!service)
      throw new ApiError('internal_error', `service ${serviceId} of an idempotent replay is missing`);
    return answer(request, { ...service, password: ctx.secretBox.open(service.passwordEnc) });
  }

  async function replay(
    request: FastifyRequest,
    reply: FastifyReply,
    resellerId: string,
    key: string,
    hash: string,
  ) {
    const found = await findIdempotencyKey(db, resellerId, key, ctx.clock.now());
    if (!found) return undefined;
    if (found.requestHash !== hash) {
      throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with another request body');
    }
    reply.header('idempotent-replayed', 'true');
    return respond(request, (JSON.parse(found.response) as { service_id: string }).service_id);
  }

  const handler: ApiHandler<typeof OrderSchema> = async (request, reply) => {
    const caller = request.caller!;
    const order = request.body;
    const keyHeader = request.headers['idempotency-key'];
    let key: string | undefined;
    if (keyHeader !== undefined) {
      if (typeof keyHeader !== 'string' || !IDEMPOTENCY_KEY.test(keyHeader)) {
        throw new ApiError('validation_failed', 'Idempotency-Key must be 1 to 255 visible ASCII characters');
      }
      key = keyHeader;
    }
    const hash = key ? requestHash(order) : '';
    if (key) {
      const replayed = await replay(request, reply, caller.resellerId, key, hash);
      if (replayed) return replayed;
    }

    const catalog = await ctx.catalog.get();
    const product = isUuid(order.product_id) ? catalog.byId.get(order.product_id.toLowerCase()) : undefined;
    if (!product) throw new ApiError('product_not_found', `Product ${order.product_id} not found`);
    const domain = checkOrder(product, order, catalog.unavailableTemplates);

    let placed: PlacedOrder;
    try {
      placed = await orders.place(
        {
          resellerId: caller.resellerId,
          clientId: caller.clientId,
          productId: product.id,
          templateId: order.template_id.toLowerCase(),
          domainName: domain,
          cpu: order.cpu,
          ram: order.ram,
          hdd: order.hdd,
          ipCount: order.ip,
          backup: order.backup,
        },
        ctx.clock.now(),
        key ? { key, requestHash: hash } : undefined,
      );
    } catch (err) {
      // A concurrent request with the same key won the race: answer as it did.
      if (key && isUniqueViolation(err)) {
        const replayed = await replay(request, reply, caller.resellerId, key, hash);
        if (replayed) return replayed;
      }
      throw err;
    }
    request.log.info({ serviceId: placed.id, productId: product.id }, 'order created');
    return answer(request, placed);
  };

  const options = apiRoute('service', OrderSchema);
  app.post(`${API}/service/create-order`, options, handler);
  // Variant B's spelling of the same route (CONTRACT.md section 1).
  app.post(`${BASE}/v2/service/create-order`, options, handler);
}
