/**
 * Payload schemas of services that more than one API or the console share: a backup, the job
 * header of an accepted operation, the operator's service list and details.
 */
import { Type } from 'typebox';
import { STATUSES } from '../../domain/status-machine.ts';
import { Id, Nullable, StringEnum, Timestamp } from './common.ts';
import { AuditActorPayload, OperatorJobPayload } from './operator.ts';
import { DetailsPayload } from './service-views.ts';

export const BackupPayload = Type.Object(
  {
    backup_id: Id(),
    service_id: Id(),
    status: StringEnum(['creating', 'available', 'restoring', 'deleting', 'failed']),
    size_gb: Type.Number({ description: 'Counted against the service’s `backup` GB' }),
    kind: StringEnum(['manual', 'scheduled']),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Backup' },
);

/** A backup as the operator sees it: where it stands in its chain and what it takes in the store. */
export const OperatorBackupPayload = Type.Object(
  {
    ...BackupPayload.properties,
    format: StringEnum(['archive', 'legacy'], {
      description:
        '`archive`: in the backup store (restorable onto any host); `legacy`: kept on the host it was taken on, before the backup store',
    }),
    parent_id: Nullable(Id(), {
      description: 'The backup this incremental one carries the changes since; null for a full one',
    }),
    stored_bytes: Type.Integer({
      description: 'Bytes its objects take in the backup store (compressed, encrypted); 0 for a legacy one',
    }),
    disk_bytes: Type.Integer({ description: 'The guest disk’s size when it was taken; 0 for a legacy one' }),
    host_id: Nullable(Type.String(), { description: 'The host it was taken on' }),
    keep_until: Nullable(Timestamp, {
      description: 'Kept past its service’s termination until then (VRP_BACKUP_KEEP_AFTER_TERMINATE)',
    }),
  },
  { title: 'OperatorBackup' },
);

/** What `POST OPS/backups/{id}/verify` found. */
export const BackupVerifyPayload = Type.Object(
  {
    backup_id: Id(),
    ok: Type.Boolean({ description: 'Every segment was read back as it was written' }),
    segments: Type.Integer({ description: 'Segments the backup has' }),
    bad: Type.Array(
      Type.Object({
        segment: Type.Integer({ description: 'Its index; -1: the manifest itself' }),
        offset: Type.Integer({ description: 'Where its bytes go on the guest disk' }),
        length: Type.Integer(),
        reason: Type.String(),
      }),
      { description: 'The segments that are not as written' },
    ),
  },
  { title: 'BackupVerification' },
);

/** The header of the answer that names the job an operation queued. */
export const JOB_HEADERS = {
  'X-Job-Id': {
    description: 'The job queued (absent when nothing was to be done)',
    schema: { type: 'string', format: 'uuid' },
  },
};

/** A service in the operator's list: who owns it, where it runs, what it has; no password. */
export const ServiceSummaryPayload = Type.Object(
  {
    service_id: Id(),
    reseller_id: Id(),
    status: StringEnum(STATUSES),
    projected_status: StringEnum(STATUSES),
    domain_name: Type.String(),
    product_id: Id(),
    product_name: Nullable(Type.String(), {
      description: 'The product’s name in the catalogue; null if the catalogue no longer holds it',
    }),
    plan_id: Nullable(Type.String(), {
      description: 'The product’s plan whose CPU, RAM and disk the service has; null when none has them',
    }),
    plan_name: Nullable(Type.String(), { description: 'That plan’s name; null with no plan' }),
    ip: Type.String({ description: 'The first address; empty until the server is created' }),
    cpu: Type.Integer(),
    ram: Type.Integer(),
    hdd: Type.Integer(),
    ip_count: Type.Integer(),
    backup: Type.Integer(),
    host_id: Nullable(Type.String(), { description: 'The host its server is on; null before it is created' }),
    pending_jobs: Type.Integer({ description: 'Jobs accepted and not finished' }),
    created_at: Timestamp,
    terminated_at: Nullable(Timestamp),
  },
  { title: 'OperatorServiceSummary' },
);

/** A page of the operator's services list, with cursors both ways and how many match. */
export const ServiceListPayload = Type.Object(
  {
    items: Type.Array(ServiceSummaryPayload),
    next_cursor: Nullable(Type.String(), {
      description: 'Pass it as `cursor` for the next page; null on the last page',
    }),
    prev_cursor: Nullable(Type.String(), {
      description: 'Pass it as `cursor` for the previous page; null on the first page',
    }),
    total: Type.Integer({
      description:
        'How many services the filters match (the whole list, not this page), counted up to 10,000: with `total_capped` true there are more',
    }),
    total_capped: Type.Boolean({ description: 'More services match than `total` (10,000) says' }),
  },
  { title: 'OperatorServiceList' },
);

/** Everything about a service: what the reseller sees, and who owns it, where it runs, its jobs and backups. */
export const ServiceDetailsPayload = Type.Object(
  {
    ...DetailsPayload.properties,
    password: Nullable(Type.String(), {
      description:
        'The root password: null unless asked for with `reveal=true`, which only an admin may (403 `insufficient_role`) and which the audit log records (`service.reveal_password`)',
    }),
    reseller_id: Id(),
    client_id: Type.String({ description: 'The application that ordered it' }),
    projected_status: StringEnum(STATUSES),
    pending_jobs: Type.Integer(),
    host: Nullable(
      Type.Object({
        host_id: Type.String(),
        state: StringEnum(['active', 'draining', 'evacuating']),
        mac: Nullable(Type.String({ pattern: '^[0-9a-f]{2}(:[0-9a-f]{2}){5}$' }), {
          description:
            "The MAC address of the server's interface on the provider's network: given once and kept for the server's life, no other server's (libvirt; docs/libvirt.md, *MAC addresses*). null where there is none: the simulated hypervisor, libvirt without a bridge (no interface), or a libvirt server made before this version until it next starts from stopped (a restart or a reinstall also starts it) or goes into rescue",
        }),
      }),
      {
        description: 'The host its server is on; null before it is created',
      },
    ),
    updated_at: Timestamp,
    jobs: Type.Array(OperatorJobPayload, { description: 'Its latest jobs (at most 50), newest first' }),
    backups: Type.Array(OperatorBackupPayload),
    os_templates: Type.Array(
      Type.Object({
        template_id: Id(),
        name: Type.String(),
        available: Type.Boolean({
          description:
            'false: the provider has no image for it yet (a reinstall from it is 400 `template_unavailable`)',
        }),
      }),
      { description: 'The OS templates of its product: what a reinstall may install' },
    ),
    suspensions: Type.Array(
      Type.Object({
        suspended_at: Timestamp,
        suspended_by: AuditActorPayload,
        reason: Nullable(Type.String()),
        lifted_at: Nullable(Timestamp),
        lifted_by: Nullable(AuditActorPayload),
      }),
      {
        description:
          'Its suspensions, newest first: when each was accepted, by whom (the product itself for a traffic quota: `system`) and why; when it was lifted and by whom (null while it lasts)',
      },
    ),
  },
  { title: 'OperatorServiceDetails' },
);
