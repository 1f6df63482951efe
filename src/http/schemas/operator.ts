/** Payload schemas of the operator API, which the console reads too. */
import { type Static, Type } from 'typebox';
import { STATUSES } from '../../domain/status-machine.ts';
import type { Job } from '../../store/repos/jobs.ts';
import { Id, Nullable, StringEnum, Timestamp } from './common.ts';
import { JobPayload, jobView } from './service-views.ts';
import { UsagePayload } from './usage.ts';

export const AuditEntryPayload = Type.Object(
  {
    entry_id: Id('Time-ordered (UUIDv7)'),
    created_at: Type.String({ format: 'date-time' }),
    actor: Type.Object({
      type: StringEnum(['application', 'operator', 'cli']),
      id: Type.String({ description: 'Application: its client_id; operator: its id; cli: the local user' }),
    }),
    action: Type.String({
      description: '`object.verb`: `service.order`, `backup.restore`, `reseller.quota`, `job.cancel`...',
    }),
    target: Nullable(Type.Object({ type: Type.String(), id: Type.String() })),
    service_id: Nullable(Type.String()),
    reseller_id: Nullable(Type.String()),
    outcome: Type.String({ description: '`ok`, or the error code the request was refused with' }),
    request_id: Nullable(Type.String({ description: 'The request’s X-Request-Id; null for the CLI' })),
  },
  { title: 'AuditEntry' },
);

export const Amounts = (description: string) =>
  Type.Object(
    {
      cpu: Type.Integer({ description: 'vCores' }),
      ram_gb: Type.Integer(),
      disk_gb: Type.Integer(),
      backup_gb: Type.Number({
        description: 'Backup storage on the host (the simulated driver keeps backups there)',
      }),
    },
    { description },
  );

export const HostPayload = Type.Object(
  {
    host_id: Type.String(),
    driver: StringEnum(['simulated', 'libvirt']),
    state: StringEnum(['active', 'draining', 'evacuating']),
    capacity: Amounts('As configured'),
    used: Amounts('Reserved by the VMs on it'),
    free: Amounts('Capacity less use (negative where a host was configured below its use)'),
    services: Type.Integer({ description: 'VMs on it' }),
  },
  { title: 'Host' },
);

/** A job in the operator's list: which reseller's it is too. */
export const OperatorJobPayload = Type.Object(
  {
    ...JobPayload.properties,
    reseller_id: Id(),
    retry_job_id: Nullable(Id(), {
      description:
        'A failed job an operator retried: the job that retry queued (a job is retried at most once)',
    }),
  },
  { title: 'OperatorJob' },
);

/** A job as the operator API shows it (the list, a service's details). */
export function operatorJobView(j: Job): Static<typeof OperatorJobPayload> {
  return { ...jobView(j), reseller_id: j.resellerId, retry_job_id: j.retryJobId };
}

/** Where the service stands after a cancel: the status now, and the one its remaining jobs lead to. */
export const CancelPayload = Type.Object({
  job: JobPayload,
  service: Type.Object({
    service_id: Id(),
    status: StringEnum(STATUSES),
    projected_status: StringEnum(STATUSES),
    allowed_actions: Type.Array(Type.String(), {
      description: 'What the service accepts now, from its projected status',
    }),
    pending_jobs: Type.Integer(),
  }),
});

export const RetryPayload = Type.Object({
  job: Nullable(JobPayload, {
    description: 'The new job; null when there was nothing left to do (see message)',
  }),
});

export const OverviewPayload = Type.Object(
  {
    services: Type.Object(Object.fromEntries(STATUSES.map((s) => [s, Type.Integer({ minimum: 0 })])), {
      description: 'How many services there are of each status, terminated ones included',
    }),
    jobs: Type.Object({
      queued: Type.Integer({ minimum: 0 }),
      running: Type.Integer({ minimum: 0 }),
      failed_last_24h: Type.Integer({ minimum: 0, description: 'Failed jobs created in the last 24 hours' }),
    }),
  },
  { title: 'OperatorOverview' },
);

export const ResellerPayload = Type.Object(
  {
    reseller_id: Id(),
    name: Type.String(),
    enabled: Type.Boolean({
      description: 'A disabled reseller’s applications get no tokens; their tokens are refused',
    }),
    created_at: Timestamp,
  },
  { title: 'Reseller' },
);

const ApplicationPayload = Type.Object(
  {
    client_id: Type.String(),
    name: Type.String(),
    scopes: Type.Array(StringEnum(['access', 'products', 'service'])),
    variant: StringEnum(['A', 'B']),
    enabled: Type.Boolean(),
    created_at: Timestamp,
  },
  { title: 'Application' },
);

/** A reseller with its applications, quota and use: GET OPS/resellers/:id (the console's reseller page reads it). */
export const ResellerDetailsPayload = Type.Object(
  {
    ...ResellerPayload.properties,
    applications: Type.Array(ApplicationPayload, {
      description: 'Its applications (OAuth clients), without secrets',
    }),
    quota: UsagePayload.properties.quota,
    use: UsagePayload.properties.use,
  },
  { title: 'ResellerDetails' },
);
