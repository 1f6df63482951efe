import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { allowedActions } from '../../domain/status-machine.ts';
import { cancelJob } from '../../jobs/cancel-job.ts';
import { projectedState } from '../../jobs/queue.ts';
import { retryJob } from '../../jobs/retry-job.ts';
import { type ListedJob, listJobsPage } from '../../store/repos/job-list.ts';
import { answerMessage } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { pathId } from '../path-id.ts';
import { auditContext } from '../plugins/audit.ts';
import { InputId, isUuid, StringEnum } from '../schemas/common.ts';
import { CancelPayload, ListedJobPayload, operatorJobView, RetryPayload } from '../schemas/operator.ts';
import { jobView } from '../schemas/service-views.ts';
import { JOB_HEADERS } from '../schemas/services.ts';
import { operatorRoute } from './operator-route.ts';
import { decodeCursor, encodeCursor, limitOf, Page, PageQuery, pageOf } from './paging.ts';

const JobParams = Type.Object({ job_id: InputId('The job') });

const ListQuery = Type.Object({
  status: Type.Optional(StringEnum(['queued', 'running', 'failed', 'succeeded', 'skipped'])),
  service_id: Type.Optional(InputId('Only this service’s jobs')),
  include_retried: Type.Optional(
    StringEnum(['true', 'false'], {
      description:
        'With `status=failed`: `true` lists failed jobs already retried too (by default they are left out: one an operator retried, or one a later job of the same service and action succeeded after). With another status: 400 `validation_failed`',
    }),
  ),
  ...PageQuery,
});

const listedView = (j: ListedJob) => ({
  ...operatorJobView(j),
  domain: j.domain,
  reseller_name: j.resellerName,
});

const tags = ['Jobs'];

/**
 * `OPS/jobs...`: jobs across resellers; retry a failed one, cancel a queued one
 * (docs/design/contract.md#operator-api).
 */
export function registerOperatorJobRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  app.get(
    `${OPS}/jobs`,
    operatorRoute({
      operationId: 'listJobs',
      tags,
      summary: 'List jobs across resellers',
      description:
        'Newest first, by status (`queued`, `running`, `failed`...) and service, a page at a time, each with its service’s domain and its reseller’s name: where the failed jobs are. `status=failed` leaves out failures already retried unless `include_retried=true`.',
      querystring: ListQuery,
      response: { 200: Page(ListedJobPayload) },
    }),
    async (request) => {
      const query = request.query;
      if (query.include_retried !== undefined && query.status !== 'failed') {
        throw new ApiError('validation_failed', 'include_retried is taken with status=failed only');
      }
      const limit = limitOf(query);
      const before =
        query.cursor && decodeCursor(ctx.keys.cursorKey, 'jobs', query.cursor, ['number', 'string'] as const);
      if (query.service_id !== undefined && !isUuid(query.service_id))
        return { items: [], next_cursor: null };
      const rows = await listJobsPage(db, {
        status: query.status,
        serviceId: query.service_id?.toLowerCase(),
        hideRetried: query.status === 'failed' && query.include_retried !== 'true',
        before: before ? { createdAt: before[0], id: before[1] } : undefined,
        limit: limit + 1,
      });
      return pageOf(rows, limit, listedView, (j) =>
        encodeCursor(ctx.keys.cursorKey, 'jobs', [j.createdAt, j.id]),
      );
    },
  );

  app.post(
    `${OPS}/jobs/:job_id/retry`,
    operatorRoute(
      {
        operationId: 'retryJob',
        tags,
        summary: 'Retry a failed job',
        description:
          'Queues the failed job’s operation again as a new job, for its reseller, checked like a new request: 400 `invalid_state` if the service no longer accepts it, 200 with no job when its target was reached meanwhile. A job that did not fail is 409 `job_not_failed`. A job is retried at most once, even by concurrent requests: a job retried already is 409 `job_already_retried`, whose envelope names the job that retry queued in `retry_job_id`.',
        params: JobParams,
        errorStatuses: [409],
        successHeaders: JOB_HEADERS,
        response: { 200: RetryPayload },
      },
      'job.retry',
      'operate',
    ),
    async (request, reply) => {
      const catalog = await ctx.catalog.get();
      const outcome = await retryJob(
        db,
        { catalog, features: ctx.store.features },
        pathId(request.params.job_id, 'job_not_found'),
        auditContext(request),
        ctx.clock.now(),
      );
      if (outcome.kind === 'noop') {
        answerMessage(reply, outcome.message);
        return { job: null };
      }
      ctx.jobSignal.notify();
      reply.header('x-job-id', outcome.job.id);
      return { job: jobView(outcome.job) };
    },
  );

  app.post(
    `${OPS}/jobs/:job_id/cancel`,
    operatorRoute(
      {
        operationId: 'cancelJob',
        tags,
        summary: 'Cancel a queued job',
        description:
          'The job ends `skipped` with the reason, never having run, and the service’s projected status (what the requests after it are checked against) is recomputed from the jobs left. A job that is running, has begun before (queued again after an attempt that did not finish: its next run finishes or undoes what that attempt changed) or has finished is 409 `job_not_queued`.',
        params: JobParams,
        errorStatuses: [409],
        response: { 200: CancelPayload },
      },
      'job.cancel',
      'operate',
    ),
    async (request) => {
      const { job, service } = await cancelJob(
        db,
        ctx.store.features,
        pathId(request.params.job_id, 'job_not_found'),
        auditContext(request),
        ctx.clock.now(),
      );
      ctx.jobSignal.notify();
      return {
        job: jobView(job),
        service: {
          service_id: service.id,
          status: service.status,
          projected_status: service.projectedStatus,
          allowed_actions: allowedActions(projectedState(service)),
          pending_jobs: service.pendingJobs,
        },
      };
    },
  );
}
