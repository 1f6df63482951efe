import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { currentJob, listServiceJobs } from '../../store/repos/jobs.ts';
import { findOwnedService, findOwnedServiceStatus, type Service } from '../../store/repos/services.ts';
import type { App } from '../app.ts';
import { API } from '../base-path.ts';
import { successEnvelope } from '../envelope.ts';
import { EmptyBody, ServiceParams } from '../schemas.ts';
import { serviceIdOf } from '../service-id.ts';
import { detailsView, jobView, statusView } from '../service-views.ts';

/** Another reseller's service is indistinguishable from none: 404 either way. */
function found<T>(service: T | undefined): T {
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  return service;
}

/** The caller's service named by the path, or 404. */
export async function ownedService(ctx: AppContext, request: FastifyRequest): Promise<Service> {
  return found(await findOwnedService(ctx.store.reads, request.caller!.resellerId, serviceIdOf(request)));
}

const JobsQuery = Type.Object({ limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$' })) });

export function registerServiceRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  const read = { config: { scope: 'service' as const }, schema: { params: ServiceParams } };
  const readWithBody = {
    config: { scope: 'service' as const },
    schema: { params: ServiceParams, body: EmptyBody },
  };

  const details = async (request: FastifyRequest) => {
    const service = await ownedService(ctx, request);
    const job = service.pendingJobs > 0 ? await currentJob(ctx.store.reads, service.id) : undefined;
    return successEnvelope(request.variant, detailsView(service, job, ctx.secretBox));
  };
  const status = async (request: FastifyRequest) => {
    const service = found(
      await findOwnedServiceStatus(ctx.store.reads, request.caller!.resellerId, serviceIdOf(request)),
    );
    const job = service.pendingJobs > 0 ? await currentJob(ctx.store.reads, service.id) : undefined;
    return successEnvelope(request.variant, statusView(service, job));
  };
  // Variant B reads with GET, variant A with POST: both are served.
  app.get(`${API}/service/:service_id/details`, read, details);
  app.post(`${API}/service/:service_id/details`, readWithBody, details);
  app.get(`${API}/service/:service_id/status`, read, status);
  app.post(`${API}/service/:service_id/status`, readWithBody, status);

  app.get(
    `${API}/service/:service_id/jobs`,
    { config: { scope: 'service' }, schema: { params: ServiceParams, querystring: JobsQuery } },
    async (request) => {
      const service = await ownedService(ctx, request);
      const limit = Number(request.query.limit ?? 100);
      if (limit < 1 || limit > 1000)
        throw new ApiError('validation_failed', 'limit must be between 1 and 1000');
      const jobs = await listServiceJobs(db, service.id, limit);
      return successEnvelope(request.variant, jobs.map(jobView));
    },
  );
}
