/**
 * The events a reseller can pull from the feed or receive by webhook
 * (docs/design/contract.md#events-and-webhooks): their types and the data each carries, in the
 * API's words (snake_case, as sent).
 */
import type { DriftReason } from './power-drift.ts';
import type { ServiceError } from './service-error.ts';
import type { JobAction, Status } from './status-machine.ts';

export const EVENT_TYPES = ['service.status_changed', 'job.finished', 'service.traffic_exceeded'] as const;

/** Webhooks a reseller may register at most (docs/design/contract.md#events-and-webhooks). */
export const MAX_WEBHOOKS_PER_RESELLER = 10;
export type EventType = (typeof EVENT_TYPES)[number];

/** A finished job's end: what `job.finished` reports. */
export type FinishedJobStatus = 'succeeded' | 'failed' | 'skipped';

export interface StatusChangedData {
  readonly service_id: string;
  readonly from: Status;
  readonly to: Status;
  /** The job whose run changed the status; null when the hypervisor's report changed it. */
  readonly job_id: string | null;
  /** Only without a job: why the status changed (domain/power-drift.ts, DRIFT_REASONS). */
  readonly reason?: DriftReason;
  /** Only without a job: the reason for a person. */
  readonly message?: string;
  /** Only when `to` is `failed`: why the service is failed (domain/service-error.ts), if known. */
  readonly error?: ServiceError;
}

export interface JobFinishedData {
  readonly job_id: string;
  readonly service_id: string;
  readonly action: JobAction;
  readonly status: FinishedJobStatus;
  readonly error: string | null;
}

/**
 * A service went past its product's monthly traffic quota (once per service per UTC month), and
 * what was done: throttled to `throttle_mbit`, or a suspension queued (reason `traffic_exceeded`).
 */
export interface TrafficExceededData {
  readonly service_id: string;
  /** The UTC month, `2026-03`. */
  readonly month: string;
  /** The product's quota, GB (10^9 bytes) of in and out together. */
  readonly traffic_gb: number;
  readonly traffic_in_gb: number;
  readonly traffic_out_gb: number;
  readonly action: 'throttle' | 'suspend';
  /** Only for `throttle`: the rate each direction is held to until the month ends, Mbit/s. */
  readonly throttle_mbit?: number;
}

/** An event still to be recorded: its type and its data. */
export type NewEvent =
  | { readonly type: 'service.status_changed'; readonly data: StatusChangedData }
  | { readonly type: 'job.finished'; readonly data: JobFinishedData }
  | { readonly type: 'service.traffic_exceeded'; readonly data: TrafficExceededData };

/** The `error` member of a status change: the service's error, only on a change to `failed`. */
const errorMember = (to: Status, error: ServiceError | null | undefined) =>
  to === 'failed' && error ? { error: { code: error.code, message: error.message } } : {};

/**
 * `service.status_changed`, or nothing when the status stays as it was. `error`: why the service
 * is failed, told when `to` is `failed`.
 */
export function statusChanged(
  serviceId: string,
  from: Status,
  to: Status,
  jobId: string | null,
  error?: ServiceError | null,
): NewEvent[] {
  if (from === to) return [];
  return [
    {
      type: 'service.status_changed',
      data: { service_id: serviceId, from, to, job_id: jobId, ...errorMember(to, error) },
    },
  ];
}

/** `service.status_changed` without a job: the hypervisor said otherwise (jobs/power-check.ts). */
export function statusCorrected(
  serviceId: string,
  from: Status,
  to: Status,
  reason: DriftReason,
  message: string,
  error?: ServiceError | null,
): NewEvent {
  return {
    type: 'service.status_changed',
    data: { service_id: serviceId, from, to, job_id: null, reason, message, ...errorMember(to, error) },
  };
}

export function jobFinished(
  job: { readonly id: string; readonly serviceId: string; readonly action: JobAction },
  status: FinishedJobStatus,
  error: string | null,
): NewEvent {
  return {
    type: 'job.finished',
    data: { job_id: job.id, service_id: job.serviceId, action: job.action, status, error },
  };
}

export function trafficExceeded(data: TrafficExceededData): NewEvent {
  return { type: 'service.traffic_exceeded', data };
}

export function isEventType(value: string): value is EventType {
  return EVENT_TYPES.some((t) => t === value);
}
