import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { byCodeUnits } from '../../domain/code-unit-text.ts';
import { ApiError } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import { checkOrder } from '../../domain/orders.ts';
import { checkSshKeys } from '../../domain/ssh-keys.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { createOrderPlacer, type PlacedOrder } from '../../store/place-order.ts';
import { findIdempotencyKey } from '../../store/repos/idempotency-keys.ts';
import { findService } from '../../store/repos/services.ts';
import { type ApiHandler, apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API, BASE } from '../base-path.ts';
import { auditContext } from '../plugins/audit.ts';
import { applicationCaller } from '../plugins/authenticate.ts';
import { ByVariant, Id, InputId, SshKeys } from '../schemas/common.ts';

const Amount = Type.Integer({ minimum: 0, maximum: 1_000_000 });

const OrderBody = Type.Object({
  product_id: InputId('The product (404 `product_not_found` if none has this id)'),
  domain_name: Type.String({
    minLength: 1,
    maxLength: 253,
    description: 'An RFC 1123 host name; stored in lower case',
    examples: ['server1.example.com'],
  }),
  template_id: InputId('One of the product’s `os_templates` (400 `invalid_template` otherwise)'),
  cpu: Amount,
  ram: Amount,
  hdd: Amount,
  ip: Amount,
  backup: Amount,
  ssh_keys: Type.Optional(SshKeys('Installed for root when the server is created; none when absent')),
});
type Order = Static<typeof OrderBody>;

/**
 * The answer to an order differs by variant
 * (docs/design/contract.md#payloads-that-differ-by-variant): A also carries the new server's login.
 */
const OrderPayload = ByVariant({
  A: Type.Object(
    {
      service_id: Id('The new service'),
      username: Type.String({ examples: ['root'] }),
      password: Type.String({ description: 'The generated password of the server' }),
    },
    { title: 'OrderedServiceA' },
  ),
  B: Type.Array(Type.Object({ service_id: Id('The new service') }, { title: 'OrderedService' })),
});

/** An order is safe to retry with the same key (docs/design/contract.md#idempotency-keys). */
const OrderHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      pattern: '^[!-~]{1,255}$',
      description:
        'Makes the order safe to retry: the same key with the same body within 24 h answers what the first request answered (with `Idempotent-Replayed: true`) and creates nothing; with another body, 400 `idempotency_key_reused`. 1 to 255 visible ASCII characters, per reseller.',
    }),
  ),
});

const OrderSchema = { body: OrderBody, headers: OrderHeaders, response: { 200: OrderPayload } };
const OrderDocs = {
  tags: ['Orders'],
  successHeaders: {
    'Idempotent-Replayed': {
      description: '`true` when this is the answer of an earlier request with the same Idempotency-Key',
      schema: { type: 'string', const: 'true' },
    },
  },
  summary: 'Order a virtual server',
  description:
    'Checks the amounts against the product’s bounds, the template against its `os_templates` and the optional `ssh_keys` (400 `invalid_ssh_key`), and records the service as `pending` with user `root` and a generated password; nothing is allocated until `create`. Variant A answers `{service_id, username, password}`, variant B `[{service_id}]`.',
};

function requestHash(order: Order): string {
  const canonical = JSON.stringify(Object.entries(order).sort(([a], [b]) => byCodeUnits(a, b)));
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
    const caller = applicationCaller(request);
    const order = request.body;
    // Checked by the route's headers schema.
    const key = request.headers['idempotency-key'];
    const hash = key ? requestHash(order) : '';
    if (key) {
      const replayed = await replay(request, reply, caller.resellerId, key, hash);
      if (replayed) return replayed;
    }

    const catalog = await ctx.catalog.get();
    const product = isUuid(order.product_id) ? catalog.byId.get(order.product_id.toLowerCase()) : undefined;
    // A retired product is not on offer: refused as one that does not exist.
    if (!product || product.retired)
      throw new ApiError('product_not_found', `Product ${order.product_id} not found`);
    const domain = checkOrder(product, order, catalog.unavailableTemplates);
    const sshKeys = checkSshKeys(order.ssh_keys ?? []);

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
          sshKeys,
        },
        ctx.clock.now(),
        key ? { key, requestHash: hash } : undefined,
        auditContext(request),
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

  app.post(
    `${API}/service/create-order`,
    apiRoute('service', { ...OrderSchema, ...OrderDocs, operationId: 'createOrder' }, 'service.order'),
    handler,
  );
  // Variant B's spelling of the same route (docs/design/contract.md#addresses).
  app.post(
    `${BASE}/v2/service/create-order`,
    apiRoute(
      'service',
      {
        ...OrderSchema,
        ...OrderDocs,
        operationId: 'createOrderAlias',
        summary: 'Order a virtual server (variant B’s path)',
        description: `The same as \`POST ${API}/service/create-order\`, at the path variant B of the interface gives.`,
      },
      'service.order',
    ),
    handler,
  );
}
