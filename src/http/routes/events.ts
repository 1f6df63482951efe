import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { DRIFT_REASONS, type DriftReason } from '../../domain/power-drift.ts';
import { SERVICE_ERROR_CODES } from '../../domain/service-error.ts';
import { JOB_ACTIONS, STATUSES } from '../../domain/status-machine.ts';
import { listEvents, type StoredEvent } from '../../store/repos/events.ts';
import { apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API } from '../base-path.ts';
import { applicationCaller } from '../plugins/authenticate.ts';
import { isUuid, Nullable, StringEnum } from '../schemas/common.ts';

const Id = Type.String({ format: 'uuid' });
const Timestamp = Type.String({ format: 'date-time' });

const StatusChangedEvent = Type.Object(
  {
    event_id: Id,
    type: Type.Literal('service.status_changed'),
    created_at: Timestamp,
    data: Type.Object({
      service_id: Id,
      from: StringEnum(STATUSES),
      to: StringEnum(STATUSES),
      job_id: Nullable(Type.String({ format: 'uuid' })),
      reason: Type.Optional(
        Type.Unsafe<DriftReason>({
          type: 'string',
          enum: [...DRIFT_REASONS],
          description: 'Only when job_id is null: why the hypervisor changed the status',
        }),
      ),
      message: Type.Optional(
        Type.String({ description: 'Only when job_id is null: the reason, for a person' }),
      ),
      error: Type.Optional(
        Type.Object(
          {
            code: StringEnum(SERVICE_ERROR_CODES),
            message: Type.String({ description: 'The reason, for a person' }),
          },
          {
            description:
              'Only when `to` is `failed`: why, as the service’s status and details show it (vm_missing: removed outside the API; create_failed: its create job failed for good, with the job’s error)',
          },
        ),
      ),
    }),
  },
  {
    title: 'service.status_changed',
    description:
      "A service's status changed; job_id is the job that changed it, or null when the hypervisor reported a power state the API did not set (reason says which).",
  },
);

const JobFinishedEvent = Type.Object(
  {
    event_id: Id,
    type: Type.Literal('job.finished'),
    created_at: Timestamp,
    data: Type.Object({
      job_id: Id,
      service_id: Id,
      action: StringEnum(JOB_ACTIONS),
      status: StringEnum(['succeeded', 'failed', 'skipped']),
      error: Nullable(Type.String()),
    }),
  },
  {
    title: 'job.finished',
    description: 'A job ended: succeeded, failed (error says why) or skipped (a scheduled backup).',
  },
);

const TrafficExceededEvent = Type.Object(
  {
    event_id: Id,
    type: Type.Literal('service.traffic_exceeded'),
    created_at: Timestamp,
    data: Type.Object({
      service_id: Id,
      month: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}$', description: 'The UTC month, e.g. 2026-03' }),
      traffic_gb: Type.Integer({
        description: 'The product’s monthly quota, GB (10^9 bytes), in and out together',
      }),
      traffic_in_gb: Type.Number({ description: 'GB into the server this month when the quota was passed' }),
      traffic_out_gb: Type.Number({
        description: 'GB out of the server this month when the quota was passed',
      }),
      action: StringEnum(['throttle', 'suspend']),
      throttle_mbit: Type.Optional(
        Type.Integer({ description: 'Only for throttle: Mbit/s each direction until the month ends' }),
      ),
    }),
  },
  {
    title: 'service.traffic_exceeded',
    description:
      'A service went past its product’s monthly traffic quota (once per service per UTC month): it is throttled until the month ends, or suspended with reason traffic_exceeded (lifted only by an unsuspend).',
  },
);

/** An event as the feed shows it; webhooks send the same `type` and `data`. */
const EventPayload = Type.Union([StatusChangedEvent, JobFinishedEvent, TrafficExceededEvent]);

function eventView(e: StoredEvent): Static<typeof EventPayload> {
  // The data was recorded from the same shapes (domain/events.ts) as JSON text.
  return {
    event_id: e.id,
    type: e.type,
    created_at: new Date(e.createdAt).toISOString(),
    data: JSON.parse(e.data),
  } as Static<typeof EventPayload>;
}

const EventsQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: 64 })),
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$' })),
});

/**
 * The events feed, for clients that pull instead of receiving webhooks
 * (docs/design/contract.md#events-and-webhooks).
 */
export function registerEventRoutes(app: App, ctx: AppContext): void {
  app.get(
    `${API}/events`,
    apiRoute('service', {
      operationId: 'events',
      tags: ['Events'],
      summary: "The reseller's events, oldest first",
      description:
        'Events after the event `after` (from the oldest kept when absent), oldest first, at most `limit` ' +
        '(1 to 1000, default 100). Page by passing the last event_id received as `after`; an empty list ' +
        'means there is nothing newer yet. Events are kept at least 7 days; an `after` that names no ' +
        'event of the reseller (unknown or no longer kept) is 400 validation_failed.',
      querystring: EventsQuery,
      response: { 200: Type.Array(EventPayload) },
    }),
    async (request) => {
      const limit = Number(request.query.limit ?? 100);
      if (limit < 1 || limit > 1000)
        throw new ApiError('validation_failed', 'limit must be between 1 and 1000');
      const after = request.query.after?.toLowerCase();
      if (after !== undefined && !isUuid(after))
        throw new ApiError('validation_failed', 'after must be an event_id received from this feed');
      const events = await listEvents(ctx.store.db, applicationCaller(request).resellerId, after, limit);
      if (!events) {
        throw new ApiError(
          'validation_failed',
          'after names no event of yours (unknown, or older than the events kept); read the feed again without after',
        );
      }
      return events.map(eventView);
    },
  );
}
