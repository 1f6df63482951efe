import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { servicePtrs, setServicePtr } from '../../jobs/reverse-dns.ts';
import { findOwnedService, type Service } from '../../store/repos/services.ts';
import type { App } from '../app-type.ts';
import { auditContext } from '../plugins/audit.ts';
import { ServiceParams } from '../schemas/common.ts';
import { ReverseDnsPayload, SetPtrBody } from '../schemas/reverse-dns.ts';
import type { ServiceRequest } from '../service-id.ts';
import { RESELLER_DOOR, type ServiceDoor } from './service-actions.ts';

const UNAVAILABLE = ' Without a DNS server configured by the provider: 400 `rdns_unavailable`.';

export function registerReverseDnsRoutes(app: App, ctx: AppContext): void {
  registerReverseDnsActions(app, ctx, RESELLER_DOOR);
}

/** The service `door` finds for the request; 404 `service_not_found` if none (or another reseller's). */
async function doorService(ctx: AppContext, door: ServiceDoor, request: ServiceRequest): Promise<Service> {
  const { resellerId, serviceId } = await door.target(request);
  const service = await findOwnedService(ctx.store.reads, resellerId, serviceId);
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  return service;
}

/**
 * Reverse DNS (docs/api.md#reverse-dns), through `door`: the PTR record of each of the service's
 * addresses, read and set. Setting takes effect at once, no job: the DNS server has the record
 * when the answer is 200.
 */
export function registerReverseDnsActions(app: App, ctx: AppContext, door: ServiceDoor): void {
  const deps = { db: ctx.store.db, reverseDns: ctx.reverseDns, clock: ctx.clock };
  const tags = [door.tag('Reverse DNS')];

  app.get(
    door.url('rdns'),
    door.route({
      operationId: door.operationId('rdns'),
      tags,
      summary: 'The PTR records of the service’s addresses',
      description:
        'One entry per address the service holds (its IPv4 addresses, primary first, then its IPv6 address if it has one): `ptr` is the host name set for it, else the provider’s default, else null. A service without addresses (not created yet, terminated) has none.' +
        UNAVAILABLE,
      params: ServiceParams,
      response: { 200: ReverseDnsPayload },
    }),
    async (request) => {
      const service = await doorService(ctx, door, request);
      return servicePtrs(deps, service.id);
    },
  );

  app.post(
    door.url('rdns'),
    door.route(
      {
        operationId: door.operationId('setRdns'),
        tags,
        summary: 'Set the PTR record of one of the service’s addresses',
        description:
          'Takes effect at once, no job: when the answer is 200 the DNS server answers the new record (`dig -x`). `ptr` null resets it to the provider’s default (or no record, without one). An address that is not the service’s is 400 `ip_not_of_service`; a `ptr` that is not a host name 400 `invalid_ptr`; a service being terminated 400 `invalid_state`. A DNS server that fails is 502 `rdns_backend_failed` and nothing changes. Answers every address’s PTR, as `GET`.' +
          UNAVAILABLE,
        params: ServiceParams,
        body: SetPtrBody,
        errorStatuses: [502],
        response: { 200: ReverseDnsPayload },
      },
      'service.set_rdns',
    ),
    async (request) => {
      const service = await doorService(ctx, door, request);
      if (service.projectedStatus === 'terminated')
        throw new ApiError('invalid_state', 'The service is terminated or being terminated');
      await setServicePtr(deps, service, request.body.ip, request.body.ptr, auditContext(request));
      return servicePtrs(deps, service.id);
    },
  );
}
