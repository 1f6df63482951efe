/** Payload schemas of the operator API, which the console reads too. */
import { type Static, type TSchema, Type } from 'typebox';
import { RESOURCES } from '../../domain/catalog.ts';
import { MAX_HOST_AMOUNT } from '../../domain/host-input.ts';
import { STATUSES } from '../../domain/status-machine.ts';
import { isCancellable } from '../../jobs/cancel-job.ts';
import type { Job } from '../../store/repos/jobs.ts';
import { Id, Nullable, StringEnum, Timestamp } from './common.ts';
import { JobPayload, jobView } from './service-views.ts';
import { UsagePayload } from './usage.ts';

/** Who acted, as the audit log names them. */
export const AuditActorPayload = Type.Object(
  {
    type: StringEnum(['application', 'operator', 'cli', 'system']),
    id: Type.String({
      description: 'Application: its client_id; operator: its id; cli: the local user; system: `system`',
    }),
    name: Nullable(
      Type.String({
        description:
          'The operator’s name, `reseller / application`, the local user (cli) or `system`, as it was when the entry was written; null in entries written before names were recorded (except operators’, looked up on upgrade)',
      }),
    ),
  },
  { title: 'AuditActor' },
);

export const AuditEntryPayload = Type.Object(
  {
    entry_id: Id('Time-ordered (UUIDv7)'),
    created_at: Type.String({ format: 'date-time' }),
    actor: AuditActorPayload,
    credential: Nullable(
      Type.Object(
        {
          type: StringEnum(['operator_client', 'console_session', 'application']),
          id: Type.String({
            description:
              'The operator’s or application’s client_id, or the console session’s id (a hash of its cookie, never the cookie)',
          }),
        },
        { description: 'What the request authenticated with; null for the CLI and the system' },
      ),
    ),
    source_address: Nullable(
      Type.String({
        description:
          'The caller’s IP address: the connection’s, or a trusted proxy’s X-Forwarded-For (`VRP_TRUST_PROXY`); null for the CLI and the system',
      }),
    ),
    reason: Nullable(
      Type.String({ description: 'The reason given with the action (a suspension’s), if any' }),
    ),
    action: Type.String({
      description: '`object.verb`: `service.order`, `backup.restore`, `reseller.quota`, `job.cancel`...',
    }),
    target: Nullable(Type.Object({ type: Type.String(), id: Type.String() })),
    service_id: Nullable(Type.String()),
    service_domain: Nullable(Type.String({ description: 'The domain of the entry’s service' })),
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
        description:
          'Backup storage on the host for legacy backups (taken on simulated hosts before the backup store); backups in the backup store take none',
      }),
    },
    { description },
  );

export const HostPayload = Type.Object(
  {
    host_id: Type.String({
      description: 'Its id (the hosts the settings seeded keep the id they were listed with)',
    }),
    name: Type.String({ description: 'The operator’s name for it, unique' }),
    driver: StringEnum(['simulated', 'libvirt']),
    uri: Nullable(Type.String(), { description: 'The libvirt connection; null for simulated hosts' }),
    state: StringEnum(['active', 'draining', 'evacuating'], {
      description:
        '`active`: new servers may be placed on it; `draining`: none is; `evacuating`: none is, and its servers are being migrated off',
    }),
    health: StringEnum(['up', 'unreachable'], {
      description:
        '`unreachable`: its connection failed (when it was added, or for VRP_HOST_DOWN_AFTER); no server is placed on it',
    }),
    failing_since: Nullable(Timestamp, {
      description: 'When its connection began to fail; null while it answers',
    }),
    checked_at: Nullable(Timestamp, { description: 'When its connection was last tried' }),
    created_at: Timestamp,
    capacity: Amounts('As configured'),
    used: Amounts('Reserved by the VMs on it'),
    free: Amounts('Capacity less use (negative where a host was configured below its use)'),
    services: Type.Integer({ description: 'VMs on it' }),
    rescue_image: Nullable(Type.String(), {
      description: 'Its own rescue image (a path on the host); null: the global one (VRP_RESCUE_IMAGE)',
    }),
    evacuation: Nullable(
      Type.Object({
        started_at: Timestamp,
        done: Type.Integer({ description: 'Migrations that succeeded' }),
        failed: Type.Integer({ description: 'Migrations that failed or were cancelled' }),
        running: Type.Integer({ description: 'Migrations queued or running' }),
        left: Type.Integer({ description: 'Servers still on the host with no migration under way' }),
      }),
      {
        description:
          'Its current or last evacuation, by its migrations’ outcome; null if it was never evacuated',
      },
    ),
  },
  { title: 'Host' },
);

const HostAmount = (description: string, minimum = 1) =>
  Type.Integer({ minimum, maximum: MAX_HOST_AMOUNT, description });

/** The fields of a new host (POST OPS/hosts). */
export const NewHostBody = Type.Object(
  {
    name: Type.String({
      maxLength: 200,
      description:
        '1 to 63 letters, digits, dots, dashes or underscores; unique (400 `invalid_host_name`, `host_name_taken`)',
    }),
    driver: Type.String({
      maxLength: 50,
      description:
        'The driver the deployment runs (`simulated` or `libvirt`; another is 400 `host_driver_mismatch`)',
    }),
    uri: Type.Optional(
      Type.String({
        maxLength: 2000,
        description:
          'libvirt hosts only, required there: `qemu[+ssh|+tls|+tcp|+unix]://[user@host]/system` (or `/session`), a query allowed (400 `invalid_host_uri`)',
      }),
    ),
    cpu: HostAmount('vCores'),
    ram_gb: HostAmount('GB'),
    disk_gb: HostAmount('GB'),
    backup_gb: Type.Optional(
      HostAmount(
        'GB of backup storage for legacy backups (simulated hosts only; backups in the backup store take none)',
        0,
      ),
    ),
  },
  { additionalProperties: false },
);

/** A change to a host (PATCH OPS/hosts/{id}): the fields given change. */
export const HostChangeBody = Type.Object(
  {
    name: Type.Optional(NewHostBody.properties.name),
    uri: Type.Optional(NewHostBody.properties.uri),
    cpu: Type.Optional(HostAmount('vCores; not below what is placed on the host (400 `capacity_below_use`)')),
    ram_gb: Type.Optional(HostAmount('GB; not below what is placed on the host')),
    disk_gb: Type.Optional(HostAmount('GB; not below what is placed on the host')),
    backup_gb: NewHostBody.properties.backup_gb,
    rescue_image: Type.Optional(
      Nullable(Type.String({ minLength: 1, maxLength: 4096 }), {
        description:
          'The host’s own rescue image: an absolute path on the host, as a template’s image (a qcow2 cloud image, or a directory with vmlinuz, initrd.img and disk.qcow2); null: the global one (VRP_RESCUE_IMAGE)',
      }),
    ),
  },
  { additionalProperties: false },
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
    started_by: Nullable(AuditActorPayload, {
      description:
        'Who asked for the job: an operator, a reseller’s application, the CLI’s user, or the system (`id` and `name` the part of it that did: `scheduler`, `evacuation`, `rescue-expiry`, `traffic`); null for jobs queued before this was recorded',
    }),
    cancellable: Type.Boolean({
      description:
        'Whether an operator can cancel it (`POST OPS/jobs/{id}/cancel`): true only for a queued job no attempt of which began. A job queued again after an attempt that began (its process died, or the attempt failed and is retried) is false, as its next run finishes or undoes what that attempt changed; its cancel is 409 `job_not_queued`',
    }),
  },
  { title: 'OperatorJob' },
);

/** A job as the operator API shows it (the list, a service's details). */
export function operatorJobView(j: Job): Static<typeof OperatorJobPayload> {
  return {
    ...jobView(j),
    reseller_id: j.resellerId,
    retry_job_id: j.retryJobId,
    started_by: j.startedBy && { ...j.startedBy },
    cancellable: isCancellable(j),
  };
}

/** A job in the operator's jobs list: with its service's domain and its reseller's name. */
export const ListedJobPayload = Type.Object(
  {
    ...OperatorJobPayload.properties,
    domain: Type.String({ description: 'The service’s domain name' }),
    reseller_name: Type.String(),
  },
  { title: 'ListedJob' },
);

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
    external_billing_id: Nullable(Type.String(), {
      description:
        'The key the provider’s billing system knows the reseller by (on each line of the per-service usage CSV); null: none',
    }),
  },
  { title: 'Reseller' },
);

export const ApplicationPayload = Type.Object(
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

const PoolHosts = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  maxItems: 1000,
  description:
    'The hosts the pool serves, by id (or name); none: it serves every host no pool of its family names (400 `unknown_host`)',
});
const Ipv4Address = (description: string) => Type.String({ maxLength: 100, description });

/** An address pool as the operator API shows it (docs/operator-api.md#address-pools). */
export const IpPoolPayload = Type.Object(
  {
    pool_id: Id(),
    name: Type.String(),
    family: StringEnum(['ipv4', 'ipv6']),
    network: Type.String({ description: 'CIDR: the IPv4 network or the IPv6 pool prefix' }),
    gateway: Type.String(),
    first: Nullable(Type.String({ description: 'IPv4: the first address handed out' })),
    last: Nullable(Type.String({ description: 'IPv4: the last address handed out' })),
    reserved: Type.Array(Type.String(), { description: 'IPv4: addresses never handed out' }),
    assign_prefix_length: Nullable(
      Type.Integer({ description: 'IPv6: the prefix length each service gets' }),
    ),
    host_ids: Type.Array(Type.String(), {
      description: 'The hosts it serves; empty: the fallback of its family',
    }),
    usage: Type.Object(
      {
        total: Type.Integer({
          description:
            'IPv4: addresses handed out (first to last, without gateway and reserved); IPv6: prefixes',
        }),
        used: Type.Integer({ description: 'Of them, held by services' }),
      },
      { additionalProperties: false },
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'IpPool' },
);

export const NewIpPoolBody = Type.Object(
  {
    name: Type.String({
      maxLength: 200,
      description: '1 to 63 letters, digits, dots, dashes or underscores; unique (400 `pool_name_taken`)',
    }),
    family: StringEnum(['ipv4', 'ipv6']),
    network: Type.String({
      maxLength: 100,
      description:
        'CIDR with no host bits set: IPv4 /12 to /30, IPv6 /16 to /64; sharing no address with another pool of the family (400 `invalid_network`, `pool_overlap`)',
    }),
    gateway: Type.Optional(
      Type.String({
        maxLength: 100,
        description:
          'IPv4: a host address of the network, default its first; IPv6: link-local or in the network, default `fe80::1` (400 `gateway_outside_network`)',
      }),
    ),
    first: Type.Optional(
      Ipv4Address(
        'IPv4 only: the first address handed out, default the network’s first host address (400 `range_outside_network`)',
      ),
    ),
    last: Type.Optional(
      Ipv4Address('IPv4 only: the last address handed out, default the last before the broadcast address'),
    ),
    reserved: Type.Optional(
      Type.Array(Ipv4Address('An address of the network'), {
        maxItems: 1024,
        description: 'IPv4 only: addresses never handed out (the gateway never is either)',
      }),
    ),
    assign_prefix_length: Type.Optional(
      Type.Integer({
        description:
          'IPv6 only: the prefix length each service gets, from the pool’s own to 64, default 64 (400 `prefix_too_small`)',
      }),
    ),
    host_ids: Type.Optional(PoolHosts),
  },
  { additionalProperties: false },
);

export const IpPoolChangeBody = Type.Object(
  {
    name: Type.Optional(NewIpPoolBody.properties.name),
    gateway: NewIpPoolBody.properties.gateway,
    first: NewIpPoolBody.properties.first,
    last: NewIpPoolBody.properties.last,
    reserved: NewIpPoolBody.properties.reserved,
    host_ids: Type.Optional(PoolHosts),
  },
  { additionalProperties: false },
);

const CatalogBounds = Type.Object({ min: Type.Integer(), max: Type.Integer() });

/** A plan as the operator API shows it: the catalogue file's fields, its product, and whether it is retired. */
export const CatalogPlanPayload = Type.Object(
  {
    id: Id(),
    product_id: Id(),
    name: Type.String(),
    cpu: Type.Integer(),
    ram: Type.Integer(),
    hdd: Type.Integer(),
    price: Type.Number(),
    retired: Type.Boolean({ description: 'No longer listed to resellers' }),
  },
  { title: 'CatalogPlan' },
);

/** A product as the operator API shows it (docs/operator-api.md#catalogue): the catalogue file's fields and its use. */
export const CatalogProductPayload = Type.Object(
  {
    id: Id(),
    name: Type.String(),
    template: Type.String(),
    config: Type.Object(Object.fromEntries(RESOURCES.map((r) => [r, CatalogBounds])), {
      description: 'The bounds of each amount, whole numbers',
    }),
    os_templates: Type.Array(Id(), {
      description: 'Its OS templates, by id, in the order resellers see them',
    }),
    plans: Type.Array(CatalogPlanPayload),
    traffic_gb: Nullable(Type.Integer()),
    traffic_over: Nullable(Type.String()),
    retired: Type.Boolean({
      description: 'No longer offered to resellers (not listed, not orderable); its services keep working',
    }),
    services: Type.Integer({ description: 'Services made from it that are not terminated' }),
  },
  { title: 'CatalogProduct' },
);

/** An OS template as the operator API shows it. */
export const CatalogTemplatePayload = Type.Object(
  {
    id: Id(),
    name: Type.String(),
    image: Nullable(Type.String()),
    retired: Type.Boolean({ description: 'No longer offered for orders and reinstalls' }),
    services: Type.Integer({ description: 'Services that are not terminated and use it' }),
    products: Type.Array(Id(), { description: 'The products that offer it' }),
  },
  { title: 'CatalogOsTemplate' },
);

/**
 * A field of the catalogue file, typed here for generated clients; its finer rules (bounds, units,
 * lengths, plans within their product) are the file's (domain/catalog-file.ts, docs/catalog.md),
 * checked there with every problem named, not twice.
 */
const FileField = <T extends TSchema>(type: T, description: string) =>
  Type.Optional(Type.Unsafe<Static<T>>({ ...type, description }));
const WHOLE = Type.Union([Type.Integer(), Type.String()]);
const RETIRED = FileField(Type.Boolean(), 'true: no longer offered to resellers; false or absent: offered');

const PRODUCT_FIELDS = {
  name: FileField(Type.String(), '1 to 200 characters'),
  template: FileField(Type.String(), 'The product template kind resellers see, e.g. `kvm`'),
  config: FileField(
    Type.Record(Type.String(), Type.Object({ min: WHOLE, max: WHOLE }, { additionalProperties: true })),
    'All five resources `ram`, `ip`, `cpu`, `hdd`, `backup`, each `{ "min", "max" }`: whole numbers (or numeric strings), min <= max, at least 1 (backup: 0)',
  ),
  os_templates: FileField(Type.Array(Type.String()), 'At least one OS template id, no repeats'),
  traffic_gb: FileField(
    Type.Union([Type.Number(), Type.Null()]),
    'Monthly traffic quota per service in GB, or null for none',
  ),
  traffic_over: FileField(
    Type.Union([Type.String(), Type.Null()]),
    '`throttle:MBIT` or `suspend`, given exactly when traffic_gb is',
  ),
  retired: RETIRED,
};
const PLAN_FIELDS = {
  name: FileField(Type.String(), '1 to 200 characters'),
  cpu: FileField(WHOLE, 'Whole number within the product’s cpu bounds'),
  ram: FileField(WHOLE, 'Whole number within the product’s ram bounds'),
  hdd: FileField(WHOLE, 'Whole number within the product’s hdd bounds'),
  price: FileField(Type.Union([Type.Number(), Type.String()]), 'A number >= 0'),
  retired: RETIRED,
};
const TEMPLATE_FIELDS = {
  name: FileField(Type.String(), '1 to 200 characters'),
  image: FileField(
    Type.Union([Type.String(), Type.Null()]),
    'The base image path the libvirt driver copies, or null',
  ),
  retired: RETIRED,
};
const NEW_ID = FileField(Type.String(), 'A UUID; absent: one is made');

export const NewPlanBody = Type.Object({ id: NEW_ID, ...PLAN_FIELDS }, { title: 'NewPlan' });
export const PlanChangeBody = Type.Object(PLAN_FIELDS, { title: 'PlanChange' });
export const NewProductBody = Type.Object(
  {
    id: NEW_ID,
    ...PRODUCT_FIELDS,
    plans: FileField(
      Type.Array(Type.Object({}, { additionalProperties: true })),
      'Its plans, each as the body of a new plan (with an id, or one is made)',
    ),
  },
  { title: 'NewProduct' },
);
export const ProductChangeBody = Type.Object(PRODUCT_FIELDS, { title: 'ProductChange' });
export const NewTemplateBody = Type.Object({ id: NEW_ID, ...TEMPLATE_FIELDS }, { title: 'NewOsTemplate' });
export const TemplateChangeBody = Type.Object(TEMPLATE_FIELDS, { title: 'OsTemplateChange' });

/** A new application, or a new secret: the only answers that carry the secret (not stored in the clear anywhere). */
export const NewApplicationPayload = Type.Object(
  {
    ...ApplicationPayload.properties,
    client_secret: Type.String({ description: 'Shown only in this answer: store it in the application now' }),
  },
  { title: 'NewApplication' },
);

export const NewApplicationBody = Type.Object(
  {
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        pattern: '^[^\\u0000-\\u001f\\u007f]+$',
        description: '1 to 100 characters, no control characters; default: `RESELLER application`',
      }),
    ),
    scopes: Type.Optional(
      Type.Array(StringEnum(['access', 'products', 'service']), {
        minItems: 1,
        uniqueItems: true,
        description: 'The scopes it may ask for; default: all three',
      }),
    ),
    variant: Type.Optional(
      StringEnum(['A', 'B'], { description: 'Its default envelope variant; default B' }),
    ),
  },
  { title: 'NewApplicationRequest' },
);
