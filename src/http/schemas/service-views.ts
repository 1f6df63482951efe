import { type Static, Type } from 'typebox';
import { PASSWORD_APPLIES, type PasswordApplies } from '../../domain/passwords.ts';
import type { SecretBox } from '../../domain/secret-box.ts';
import { SERVICE_ERROR_CODES, type ServiceError } from '../../domain/service-error.ts';
import { sshKeyFingerprint } from '../../domain/ssh-keys.ts';
import { allowedActions, JOB_ACTIONS, OPERATIONS, STATUSES } from '../../domain/status-machine.ts';
import { gbOf } from '../../domain/traffic.ts';
import { projectedState } from '../../jobs/queue.ts';
import type { Job } from '../../store/repos/jobs.ts';
import type { Service, ServiceStatus } from '../../store/repos/services.ts';
import { Id, Nullable, StringEnum } from './common.ts';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

// Each view declares its return type from its schema, so a field the schema lacks fails to
// compile rather than being dropped silently from the answer by the response serializer.

const Timestamp = Type.String({ format: 'date-time' });

const PASSWORD_APPLIES_TEXT =
  'now: the running server has the new password already (its QEMU guest agent set it); ' +
  'next_boot: it takes effect when the server next boots (no guest agent answered, or it was stopped)';
const PasswordAppliesSchema = StringEnum(PASSWORD_APPLIES, { description: PASSWORD_APPLIES_TEXT });

export const JobPayload = Type.Object(
  {
    job_id: Id(),
    service_id: Id(),
    action: StringEnum(JOB_ACTIONS),
    status: StringEnum(['queued', 'running', 'succeeded', 'failed', 'skipped']),
    error: Nullable(Type.String({ description: 'Why the job failed or was skipped, for a person' })),
    attempts: Type.Integer({ description: 'How many times it was started (a crashed run is retried)' }),
    created_at: Timestamp,
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
    result: Nullable(
      Type.Object(
        {
          password_applies: Type.Optional(PasswordAppliesSchema),
        },
        { title: 'JobResult' },
      ),
      { description: 'What the finished job reports beyond its status; null for most jobs' },
    ),
  },
  { title: 'Job' },
);

export function jobView(job: Job): Static<typeof JobPayload> {
  return {
    job_id: job.id,
    service_id: job.serviceId,
    action: job.action,
    status: job.status,
    error: job.error,
    attempts: job.attempts,
    created_at: new Date(job.createdAt).toISOString(),
    started_at: iso(job.startedAt),
    finished_at: iso(job.finishedAt),
    result: job.result,
  };
}

const CurrentJob = Nullable(JobPayload, {
  description: 'The job running now, else the next queued one, else null',
});
const AllowedActions = Type.Array(StringEnum(OPERATIONS), {
  description: 'The operations the service accepts now (docs/design/contract.md#service-statuses)',
});

const ServiceErrorPayload = Nullable(
  Type.Object(
    {
      code: StringEnum(SERVICE_ERROR_CODES, {
        description:
          'vm_missing: the server no longer exists on its host (removed outside the API); create_failed: its create job failed for good',
      }),
      message: Type.String({ description: 'The reason, for a person' }),
    },
    { title: 'ServiceError' },
  ),
  {
    description:
      'Why the service is failed; null unless its status is failed (and null for a failed service whose reason is not known)',
  },
);

/** The error a view shows: the service's reason, only while it is failed. */
export function errorView(service: Pick<Service, 'status' | 'error'>): Static<typeof ServiceErrorPayload> {
  if (service.status !== 'failed' || !service.error) return null;
  return { code: service.error.code, message: service.error.message };
}

export const StatusPayload = Type.Object(
  {
    status: StringEnum(STATUSES),
    allowed_actions: AllowedActions,
    job: CurrentJob,
    error: ServiceErrorPayload,
  },
  { title: 'ServiceStatus' },
);

/**
 * Status: the same in both variants (docs/design/contract.md#payloads-that-differ-by-variant),
 * with `error` (why a failed service is failed; read apart, as the status poll's own read holds
 * only the status's columns).
 */
export function statusView(
  service: ServiceStatus,
  job: Job | undefined,
  error: ServiceError | null,
): Static<typeof StatusPayload> {
  return {
    status: service.status,
    allowed_actions: allowedActions(projectedState(service)),
    job: job ? jobView(job) : null,
    error: errorView({ status: service.status, error }),
  };
}

/** A service's IPv6 prefix, its address in it and the gateway it routes through. */
export const Ipv6Payload = Type.Object(
  {
    prefix: Type.String({ description: 'The prefix the service has (`2001:db8:4000:1::/64`)' }),
    address: Type.String({ description: 'The server’s address in it: the prefix’s `::1`' }),
    gateway: Type.String({
      description: 'The IPv6 gateway (`fe80::1`, on the link, unless the pool names another)',
    }),
  },
  { title: 'Ipv6', additionalProperties: false },
);

/** A service's traffic this UTC month (bytes) and its product's quota. */
export interface ServiceTraffic {
  readonly inBytes: number;
  readonly outBytes: number;
  readonly quotaGb: number | null;
  readonly over: string | null;
}

export const DetailsPayload = Type.Object(
  {
    service_id: Id(),
    status: StringEnum(STATUSES),
    ip: Type.String({ description: 'The first address; empty until the server is created' }),
    ips: Type.Array(Type.String(), { description: 'Every address of the server' }),
    ipv6: Nullable(Ipv6Payload, {
      description:
        'The server’s IPv6 prefix and address; null if its host has no IPv6 pool (or before it is created)',
    }),
    username: Type.String(),
    password: Type.String(),
    domain_name: Type.String(),
    product_id: Id(),
    template_id: Id(),
    cpu: Type.Integer(),
    ram: Type.Integer(),
    hdd: Type.Integer(),
    ip_count: Type.Integer(),
    backup: Type.Integer(),
    suspend_reason: Nullable(Type.String()),
    disk_revision: Nullable(Type.Number()),
    password_applies: Type.Unsafe<PasswordApplies | null>({
      type: ['string', 'null'],
      enum: [...PASSWORD_APPLIES, null],
      description: `When the last password reset reached the server; null if it never had one. ${PASSWORD_APPLIES_TEXT}`,
    }),
    ssh_key_fingerprints: Type.Array(
      Type.String({ examples: ['SHA256:2Rm0Yk9cB1q3bWq0mKQh0R0nD9n3wq2G5nJ6bV8cXxs'] }),
      {
        description:
          'The SHA-256 fingerprints (as `ssh-keygen -l` prints them) of the OpenSSH public keys installed for root at create-order or the last reinstall; empty if none',
      },
    ),
    allowed_actions: AllowedActions,
    job: CurrentJob,
    error: ServiceErrorPayload,
    created_at: Timestamp,
    terminated_at: Nullable(Timestamp),
    rescue_until: Nullable(Timestamp, {
      description:
        'In rescue: when the rescue ends by itself (the server boots its own system); null otherwise',
    }),
    traffic_in_gb: Type.Number({
      description:
        'GB (10^9 bytes, six decimals) the server received this UTC month, as of the last reading of its counters (every VRP_TRAFFIC_SAMPLE_INTERVAL)',
    }),
    traffic_out_gb: Type.Number({
      description: 'GB (10^9 bytes, six decimals) the server sent this UTC month, as of the last reading',
    }),
    traffic_gb: Nullable(
      Type.Integer({
        description:
          'The product’s monthly traffic quota: GB of in and out together per UTC month; null: none',
      }),
    ),
    traffic_over: Nullable(
      Type.String({
        examples: ['throttle:10', 'suspend'],
        description:
          'What happens past the quota: `throttle:MBIT` (each direction held to MBIT Mbit/s until the month ends) or `suspend` (reason traffic_exceeded); null without a quota',
      }),
    ),
  },
  { title: 'ServiceDetails' },
);

/**
 * Details: `ip`, `username`, `password` as variant A shows them, and everything a panel needs.
 * `rescueMaxMs`: how long a rescue lasts (VRP_RESCUE_MAX), for `rescue_until`; `ipv6`: the
 * service's prefix (serviceIpv6); `traffic`: the service's bytes this UTC month and its
 * product's quota.
 */
export function detailsView(
  service: Service,
  job: Job | undefined,
  box: SecretBox,
  rescueMaxMs: number,
  ipv6: Static<typeof Ipv6Payload> | null,
  traffic: ServiceTraffic,
): Static<typeof DetailsPayload> {
  return {
    service_id: service.id,
    status: service.status,
    ip: service.ips[0] ?? '',
    ips: [...service.ips],
    ipv6,
    username: service.username,
    password: box.open(service.passwordEnc),
    domain_name: service.domainName,
    product_id: service.productId,
    template_id: service.templateId,
    cpu: service.cpu,
    ram: service.ram,
    hdd: service.hdd,
    ip_count: service.ipCount,
    backup: service.backup,
    suspend_reason: service.suspendReason,
    disk_revision: service.diskRevision,
    password_applies: service.passwordApplies,
    ssh_key_fingerprints: service.sshKeys.map(sshKeyFingerprint),
    allowed_actions: allowedActions(projectedState(service)),
    job: job ? jobView(job) : null,
    error: errorView(service),
    created_at: new Date(service.createdAt).toISOString(),
    terminated_at: iso(service.terminatedAt),
    rescue_until: service.rescueSince === null ? null : iso(service.rescueSince + rescueMaxMs),
    traffic_in_gb: gbOf(traffic.inBytes),
    traffic_out_gb: gbOf(traffic.outBytes),
    traffic_gb: traffic.quotaGb,
    traffic_over: traffic.over,
  };
}
