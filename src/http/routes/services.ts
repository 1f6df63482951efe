import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { currentJob, listServiceJobs } from '../../store/repos/jobs.ts';
import { findOwnedService, findOwnedServiceStatus, type Service } from '../../store/repos/services.ts';
import { apiRoute } from '../api-route.ts';
import type { App } from '../app.ts';
import { API } from '../base-path.ts';
import { applicationCaller } from '../plugins/authenticate.ts';
import { EmptyBody, ServiceParams } from '../schemas.ts';
import { serviceIdOf } from '../service-id.ts';
import {
  DetailsPayload,
  detailsView,
  JobPayload,
  jobView,
  StatusPayload,
  statusView,
} from '../service-views.ts';

/** Another reseller's service is indistinguishable from none: 404 either way. */
function found<T>(service: T | undefined): T {
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  return service;
}

/** The caller's service named by the path, or 404. */
export async function ownedService(ctx: AppContext, request: FastifyRequest): Promise<Service> {
  return found(
    await findOwnedService(ctx.store.reads, applicationCaller(request).resellerId, serviceIdOf(request)),
  );
}

const JobsQuery = Type.Object({ limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$' })) });

export function registerServiceRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  const details = async (request: FastifyRequest) => {
    const service = await ownedService(ctx, request);
    const job = service.pendingJobs > 0 ? await currentJob(ctx.store.reads, service.id) : undefined;
    return detailsView(service, job, ctx.secretBox);
  };
  const status = async (request: FastifyRequest) => {
    const service = found(
      await findOwnedServiceStatus(
        ctx.store.reads,
        applicationCaller(request).resellerId,
        serviceIdOf(request),
      ),
    );
    const job = service.pendingJobs > 0 ? await currentJob(ctx.store.reads, service.id) : undefined;
    return statusView(service, job);
  };
  // Variant B reads with GET, variant A with POST (with a body): both are served.
  const readDetails = { params: ServiceParams, response: { 200: DetailsPayload } };
  const readStatus = { params: ServiceParams, response: { 200: StatusPayload } };
  app.get(`${API}/service/:service_id/details`, apiRoute('service', readDetails), details);
  app.post(
    `${API}/service/:service_id/details`,
    apiRoute('service', { ...readDetails, body: EmptyBody }),
    details,
  );
  app.get(`${API}/service/:service_id/status`, apiRoute('service', readStatus), status);
  app.post(
    `${API}/service/:service_id/status`,
    apiRoute('service', { ...readStatus, body: EmptyBody }),
    status,
  );

  app.get(
    `${API}/service/:service_id/jobs`,
    apiRoute('service', {
      params: ServiceParams,
      querystring: JobsQuery,
      response: { 200: Type.Array(JobPayload) },
    }),
    async (request) => {
      const service = await ownedService(ctx, request);
      const limit = Number(request.query.limit ?? 100);
      if (limit < 1 || limit > 1000)
        throw new ApiError('validation_failed', 'limit must be between 1 and 1000');
      const jobs = await listServiceJobs(db, service.id, limit);
      return jobs.map(jobView);
    },
  );
}
