import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { ApiError } from '../domain/errors.ts';
import { findOwnedService, type Service } from '../store/repos/services.ts';
import { pathId } from './path-id.ts';
import { applicationCaller } from './plugins/authenticate.ts';

/** A request to a per-service route: its path names the service (`ServiceParams`). */
export type ServiceRequest = FastifyRequest & { readonly params: { readonly service_id: string } };

/**
 * The service id of a per-service route. Variant A repeats it in the body as `service_id`;
 * if given it must be the same. An id that is not a UUID names no service: 404.
 */
export function serviceIdOf(request: ServiceRequest): string {
  const id = request.params.service_id;
  const body: unknown = request.body;
  if (
    typeof body === 'object' &&
    body !== null &&
    'service_id' in body &&
    body.service_id !== undefined &&
    String(body.service_id).toLowerCase() !== id.toLowerCase()
  ) {
    throw new ApiError('service_id_mismatch', 'service_id in the body differs from the one in the path');
  }
  return pathId(id, 'service_not_found');
}

/** The caller's service named by the path, or 404 (another reseller's service is as good as none). */
export async function ownedService(ctx: AppContext, request: ServiceRequest): Promise<Service> {
  const service = await findOwnedService(
    ctx.store.reads,
    applicationCaller(request).resellerId,
    serviceIdOf(request),
  );
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  return service;
}
