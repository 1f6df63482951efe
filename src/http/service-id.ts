import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { ApiError } from '../domain/errors.ts';
import { findOwnedService, type Service } from '../store/repos/services.ts';
import { applicationCaller } from './plugins/authenticate.ts';
import { isUuid } from './schemas/common.ts';

/**
 * The service id of a per-service route. Variant A repeats it in the body as `service_id`;
 * if given it must be the same. An id that is not a UUID names no service: 404.
 */
export function serviceIdOf(request: FastifyRequest): string {
  const id = (request.params as { service_id: string }).service_id;
  const body = request.body as { service_id?: unknown } | undefined;
  if (body && body.service_id !== undefined && String(body.service_id).toLowerCase() !== id.toLowerCase()) {
    throw new ApiError('service_id_mismatch', 'service_id in the body differs from the one in the path');
  }
  if (!isUuid(id)) throw new ApiError('service_not_found', 'Service not found');
  return id.toLowerCase();
}

/** The caller's service named by the path, or 404 (another reseller's service is as good as none). */
export async function ownedService(ctx: AppContext, request: FastifyRequest): Promise<Service> {
  const service = await findOwnedService(
    ctx.store.reads,
    applicationCaller(request).resellerId,
    serviceIdOf(request),
  );
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  return service;
}
