import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { currentJob, listServiceJobs } from '../../store/repos/jobs.ts';
import { findOwnedServiceDetails } from '../../store/repos/service-details.ts';
import { findOwnedService, findOwnedServiceStatus } from '../../store/repos/services.ts';
import { type ApiHandler, apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API } from '../base-path.ts';
import { applicationCaller } from '../plugins/authenticate.ts';
import { EmptyBody, ServiceParams } from '../schemas/common.ts';
import {
  DetailsPayload,
  detailsView,
  JobPayload,
  jobView,
  StatusPayload,
  statusView,
} from '../schemas/service-views.ts';
import { ownedService, serviceIdOf } from '../service-id.ts';
import { turnEnd } from '../turn-end.ts';

/** Another reseller's service is indistinguishable from none: 404 either way. */
function found<T>(service: T | undefined): T {
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  return service;
}

const JobsQuery = Type.Object({
  limit: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,4}$', description: 'How many jobs, 1 to 1000 (default 100)' }),
  ),
});

const readDocs = {
  details: {
    tags: ['Services'],
    summary: 'The service’s details',
    description:
      'Everything about the service: its amounts, addresses, login (`username`, `password`), status, the operations it accepts now and its current job.',
  },
  status: {
    tags: ['Services'],
    summary: 'The service’s status',
    description:
      'The status, the operations the service accepts now and the job running (or next queued), if any: what a panel polls.',
  },
};
const viaPost = 'The same as `GET`, as variant A of the interface sends it.';

export function registerServiceRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  // Variant B reads with GET, variant A with POST (with a body): both are served.
  const readDetails = { params: ServiceParams, response: { 200: DetailsPayload } };
  const readStatus = { params: ServiceParams, response: { 200: StatusPayload } };
  const details: ApiHandler<typeof readDetails> = async (request) => {
    // One read of the hot reads' own connection: never a transaction still open, and the
    // service, its job, its prefix and its traffic as of one moment.
    const { service, job, ipv6, traffic } = found(
      await findOwnedServiceDetails(
        ctx.store.reads,
        applicationCaller(request).resellerId,
        serviceIdOf(request),
        ctx.clock.now(),
      ),
    );
    const catalog = await ctx.catalog.get();
    // The view (the password's open) and the answer with those of the turn's other requests.
    await turnEnd();
    const product = catalog.byId.get(service.productId);
    return detailsView(service, job, ctx.secretBox, ctx.config.rescueMaxMs, ipv6, {
      ...traffic,
      quotaGb: product?.trafficGb ?? null,
      over: product?.trafficOver ?? null,
    });
  };
  const status: ApiHandler<typeof readStatus> = async (request) => {
    const resellerId = applicationCaller(request).resellerId;
    const service = found(await findOwnedServiceStatus(ctx.store.reads, resellerId, serviceIdOf(request)));
    const job = service.pendingJobs > 0 ? await currentJob(ctx.store.reads, service.id) : undefined;
    // Only a failed service has a reason to show; the others need no read beyond the index's.
    const error =
      service.status === 'failed'
        ? ((await findOwnedService(ctx.store.reads, resellerId, service.id))?.error ?? null)
        : null;
    return statusView(service, job, error);
  };
  app.get(
    `${API}/service/:service_id/details`,
    apiRoute('service', { ...readDetails, ...readDocs.details, operationId: 'details' }),
    details,
  );
  app.post(
    `${API}/service/:service_id/details`,
    apiRoute('service', {
      ...readDetails,
      ...readDocs.details,
      operationId: 'detailsPost',
      description: viaPost,
      body: EmptyBody,
    }),
    details,
  );
  app.get(
    `${API}/service/:service_id/status`,
    apiRoute('service', { ...readStatus, ...readDocs.status, operationId: 'status' }),
    status,
  );
  app.post(
    `${API}/service/:service_id/status`,
    apiRoute('service', {
      ...readStatus,
      ...readDocs.status,
      operationId: 'statusPost',
      description: viaPost,
      body: EmptyBody,
    }),
    status,
  );

  app.get(
    `${API}/service/:service_id/jobs`,
    apiRoute('service', {
      operationId: 'jobs',
      tags: ['Services'],
      summary: 'The service’s jobs',
      description: 'The jobs of the service, newest first: every operation that acted on the server.',
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
