/**
 * Table types: they mirror the SQL (snake_case). Times are epoch milliseconds (bigint),
 * booleans are 0/1 integers and lists are JSON text, the same on SQLite and PostgreSQL.
 * Status columns are typed as the values the code writes, so reads need no casts; only this
 * code writes them.
 */
import type { Generated } from 'kysely';
import type { EventType } from '../domain/events.ts';
import type { NotificationKind } from '../domain/notifications.ts';
import type { PasswordApplies } from '../domain/passwords.ts';
import type { Role } from '../domain/roles.ts';
import type { ServiceErrorCode } from '../domain/service-error.ts';
import type { JobAction, PowerStatus, StableStatus, Status } from '../domain/status-machine.ts';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped';
export type BackupStatus = 'creating' | 'available' | 'restoring' | 'deleting' | 'failed';
export type BackupKind = 'manual' | 'scheduled';
export type BackupFormat = 'archive' | 'legacy';
/** What became of a schedule's slot: a backup job was queued, or a skipped job records why not. */
export type SlotOutcome = 'queued' | 'skipped';

export interface ResellerTable {
  id: string;
  name: string;
  enabled: number;
  created_at: number;
  /** The key the provider's billing system knows the reseller by; null: none (migration 030). */
  external_billing_id: string | null;
}

export interface ClientTable {
  id: string;
  reseller_id: string;
  name: string;
  secret_hash: string;
  /** Space-separated scopes the application may request. */
  scopes: string;
  variant: string;
  enabled: number;
  /** Bumped when the secret rotates or tokens are revoked; tokens carry the version they were issued at. */
  token_version: number;
  created_at: number;
  updated_at: number;
}

/** The provider's people and scripts that use the operator API and console (migrations/008). */
export interface OperatorTable {
  id: string;
  name: string;
  /** Console login password as a salted scrypt hash (auth/secret-hash.ts); null: no console login. */
  password_hash: string | null;
  enabled: number;
  /** What the operator may do (migration 024; domain/roles.ts). */
  role: Role;
  created_at: number;
  updated_at: number;
}

/** A console login (migration 010): the SHA-256 of the cookie's secret, never the secret. */
export interface ConsoleSessionTable {
  id: string;
  operator_id: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  /** `ok`, or a login half done: `code` (the second factor awaited), `enrol` (must enrol first; migration 025). */
  stage: ConsoleSessionStage;
}

export type ConsoleSessionStage = 'ok' | 'code' | 'enrol';

/** An operator's TOTP secret (migration 025), sealed with the secret box; enrolled once confirmed. */
export interface OperatorTwoFactorTable {
  operator_id: string;
  secret: string;
  created_at: number;
  enrolled_at: number | null;
  /** The last time step (30 s) whose code was accepted; codes of it or before are refused. */
  last_step: number | null;
}

/** An operator's single-use recovery code (migration 025): its first group, and a scrypt hash of it whole. */
export interface OperatorRecoveryCodeTable {
  operator_id: string;
  lookup: string;
  code_hash: string;
  created_at: number;
  used_at: number | null;
}

/** An operator's OAuth client (scope `operator`); one per operator. */
export interface OperatorClientTable {
  /** The client_id, `vrpop_` + 24 hex digits. */
  id: string;
  operator_id: string;
  secret_hash: string;
  /** Bumped when the secret rotates or the operator is disabled; tokens carry the version they were issued at. */
  token_version: number;
  created_at: number;
  updated_at: number;
}

/** Who acted. `cli`: the `vrp` command on the server (actor_id: the local user name). */
export type AuditActorType = 'application' | 'operator' | 'cli' | 'system';

/** One state-changing request (or CLI command), written in the transaction of its change (migrations/008). */
export interface AuditLogTable {
  /** UUIDv7: time-ordered, the key lists page by. */
  id: string;
  created_at: number;
  actor_type: AuditActorType;
  /** Application: its client_id; operator: the operator's id; cli: the local user name. */
  actor_id: string;
  /** What was asked, `object.verb`: `service.order`, `backup.restore`, `client.rotate_secret`... */
  action: string;
  target_type: string | null;
  target_id: string | null;
  /** The service the action concerns, if any (also for its backups and schedules). */
  service_id: string | null;
  reseller_id: string | null;
  /** `ok`, or the error code the request was refused with. */
  outcome: string;
  request_id: string | null;
  /** The actor's name when the entry was written: operator name, `reseller / application`, local user, `system` (migrations/026). */
  actor_name: string | null;
  /** `operator_client`, `console_session` or `application`; null for the CLI and the system. */
  credential_type: string | null;
  /** The client id, or the console session's id (a hash of its secret, never the secret). */
  credential_id: string | null;
  /** The caller's address; a proxy's X-Forwarded-For only from a trusted proxy. */
  source_address: string | null;
  /** The reason given with the action (a suspension's), if any. */
  reason: string | null;
}

/** One suspension of a service: asked when and by whom, why, lifted when and by whom (migrations/026). */
export interface ServiceSuspensionTable {
  id: string;
  service_id: string;
  suspended_at: number;
  suspended_by_type: AuditActorType;
  suspended_by_id: string;
  suspended_by_name: string | null;
  reason: string | null;
  lifted_at: number | null;
  lifted_by_type: AuditActorType | null;
  lifted_by_id: string | null;
  lifted_by_name: string | null;
}

export interface ProductTable {
  id: string;
  name: string;
  template: string;
  /** JSON: {ram,ip,cpu,hdd,backup: {min,max}} as integers. */
  config: string;
  position: number;
  created_at: number;
  updated_at: number;
  /** Monthly traffic quota per service, GB (10^9 bytes); null: none (migration 023). */
  traffic_gb: number | null;
  /** Past the quota: `throttle:MBIT` or `suspend` (domain/traffic.ts); null without a quota. */
  traffic_over: string | null;
  /** 1: no longer offered to resellers; its services keep working (migration 028). */
  retired: Generated<number>;
}

export interface PlanTable {
  id: string;
  product_id: string;
  name: string;
  cpu: number;
  ram: number;
  hdd: number;
  price: number;
  position: number;
  /** 1: no longer listed to resellers (migration 028). */
  retired: Generated<number>;
}

export interface OsTemplateTable {
  id: string;
  name: string;
  /** Base image the libvirt driver copies (path on the hosts), or null. */
  image: string | null;
  created_at: number;
  updated_at: number;
  /** 1: no longer offered for orders and reinstalls; services on it keep it (migration 028). */
  retired: Generated<number>;
}

export interface ProductTemplateTable {
  product_id: string;
  template_id: string;
  position: number;
}

export interface ServiceTable {
  id: string;
  reseller_id: string;
  client_id: string;
  product_id: string;
  template_id: string;
  domain_name: string;
  username: string;
  /** AES-256-GCM ciphertext (see auth/secret-box.ts); never the plain password. */
  password_enc: string;
  cpu: number;
  ram: number;
  hdd: number;
  ip_count: number;
  backup: number;
  status: Status;
  /** The power state to return to after a suspension. */
  resume_status: PowerStatus | null;
  suspend_reason: string | null;
  /** `now` or `next_boot`: whether the last password reset reached the running guest (migrations/012). */
  password_applies: PasswordApplies | null;
  /** Why the service is `failed` (domain/service-error.ts); null when it is not, or none is known (migrations/017). */
  error_code: ServiceErrorCode | null;
  error_message: string | null;
  /** The status once every accepted job has succeeded; requests are checked against it. */
  projected_status: StableStatus;
  projected_resume: PowerStatus | null;
  /** Jobs accepted but not finished (queued or running). */
  pending_jobs: number;
  /** Sequence number of the last job accepted for this service. */
  job_seq: number;
  /** The job that runs now; set when a worker claims it, so one job runs at a time per service. */
  active_job_id: string | null;
  host_id: string | null;
  /** JSON array of IPv4 addresses, the first one primary. */
  ips: string;
  /** The driver's disk content counter, as last reported (see drivers/driver.ts). */
  disk_revision: number | null;
  created_at: number;
  updated_at: number;
  terminated_at: number | null;
  /** JSON array of the OpenSSH public keys installed for root (migrations/020). */
  ssh_keys: string;
  /** When the service entered rescue (ms); null when it is not in rescue (migrations/020). */
  rescue_since: number | null;
}

export interface JobTable {
  id: string;
  service_id: string;
  reseller_id: string;
  action: JobAction;
  /** JSON of the action's parameters (domain/job-params.ts: new amounts, sealed password, backup id...). */
  params: string;
  status: JobStatus;
  error: string | null;
  attempts: number;
  seq: number;
  run_at: number;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  locked_by: string | null;
  locked_until: number | null;
  /** What a task recorded before a step that must not be repeated (see migrations/003). */
  step_marker: string | null;
  /** JSON {status, resume}: the service's state when the job first started, so a re-run sees the same (migrations/005). */
  from_state: string | null;
  /** JSON of what the finished job reports, e.g. {"password_applies": "now"} (migrations/012). */
  result: string | null;
  /** A failed job an operator retried: the job the retry queued; null until then (migrations/016). */
  retry_job_id: string | null;
  /** Who asked for the job, as the audit log names actors; null for jobs older than migration 029. */
  started_by_type: AuditActorType | null;
  started_by_id: string | null;
  started_by_name: string | null;
}

export interface IdempotencyKeyTable {
  reseller_id: string;
  key: string;
  request_hash: string;
  response: string;
  created_at: number;
}

export interface BackupTable {
  id: string;
  service_id: string;
  reseller_id: string;
  status: BackupStatus;
  kind: BackupKind;
  /** What the backup occupies, rounded up to 0.1 GB: its stored size for an archive one. */
  size_gb: number;
  created_at: number;
  updated_at: number;
  /** `archive`: in the backup store; `legacy`: taken by the driver on its host (migration 019). */
  format: Generated<BackupFormat>;
  /** The backup an incremental one is relative to; null for a full one (migration 019). */
  parent_id: string | null;
  /** Bytes of its data and manifest objects in the backup store; 0 for a legacy one. */
  stored_bytes: Generated<number>;
  /** The guest disk's size in bytes when it was taken; 0 for a legacy one. */
  disk_bytes: Generated<number>;
  /** The host it was taken on (informational: it restores onto any host). */
  host_id: string | null;
  /** Kept past its service's termination until then (VRP_BACKUP_KEEP_AFTER_TERMINATE); else null. */
  keep_until: number | null;
}

export interface BackupScheduleTable {
  id: string;
  service_id: string;
  reseller_id: string;
  bs_time: string;
  bs_days: string;
  next_run_at: number;
  created_at: number;
}

export interface ScheduleSlotTable {
  schedule_id: string;
  slot_at: number;
  service_id: string;
  job_id: string | null;
  outcome: SlotOutcome;
  created_at: number;
}

export interface IpAddressTable {
  address_num: number;
  address: string;
  vm_id: string | null;
  allocated_at: number | null;
  released_at: number | null;
  /** The pool the address belongs to (migration 021); null only before the start that adopts it. */
  pool_id: string | null;
}

export type IpFamily = 'ipv4' | 'ipv6';

/** An address pool (migration 021): an IPv4 range or an IPv6 prefix, managed by operators. */
export interface IpPoolTable {
  id: string;
  name: string;
  family: IpFamily;
  /** CIDR: the IPv4 network or the IPv6 pool prefix. */
  network: string;
  gateway: string;
  /** IPv4: the first and last address handed out; null for IPv6. */
  first_address: string | null;
  last_address: string | null;
  /** IPv4: a JSON array of addresses never handed out. */
  reserved: string;
  /** IPv6: the prefix length each service gets (64 by default); null for IPv4. */
  assign_prefix_length: number | null;
  created_at: number;
  updated_at: number;
}

/** Which hosts a pool serves (migration 021). */
export interface IpPoolHostTable {
  pool_id: string;
  host_id: string;
}

/** A prefix of an IPv6 pool: the pool's `idx`-th prefix, held by `vm_id` or free (migration 021). */
export interface Ipv6PrefixTable {
  pool_id: string;
  idx: number;
  /** The prefix in CIDR form, compressed (`2001:db8:4000:1::/64`). */
  prefix: string;
  /** The service's address in the prefix (`2001:db8:4000:1::1`). */
  address: string;
  vm_id: string | null;
  allocated_at: number | null;
  released_at: number;
}

/** A PTR record set for one of a service's addresses (migration 022); addresses without one have the default. */
export interface ServicePtrTable {
  service_id: string;
  /** The address, canonical (IPv6 compressed). */
  address: string;
  /** The host name it points to, lower case, without a final dot. */
  ptr: string;
  /** The reverse zone it was written to, absolute (`2.0.192.in-addr.arpa.`). */
  zone: string;
  updated_at: number;
}

/** A hypervisor host and its capacity (simulated or libvirt), with what is reserved on it. */
export interface HypervisorHostTable {
  id: string;
  cpu: number;
  ram_gb: number;
  disk_gb: number;
  backup_gb: number;
  used_cpu: number;
  used_ram_gb: number;
  used_disk_gb: number;
  used_backup_gb: number;
  /**
   * `draining`: no new placements (the operator's drain); its VMs stay (migration 009).
   * `evacuating`: draining, and its VMs are being migrated off (migration 018).
   */
  state: HostState;
  /** The operator's name for the host, unique (migration 018). */
  name: string;
  /** `simulated` or `libvirt`; null only on a host of an upgraded store no driver has adopted yet. */
  driver: HostDriver | null;
  /** The libvirt connection URI; null for simulated hosts. */
  uri: string | null;
  created_at: number;
  /** `up`, or `unreachable` once its connection has failed for VRP_HOST_DOWN_AFTER. */
  health: HostHealth;
  /** When the current run of failed probes began; null while the host answers. */
  failing_since: number | null;
  /** The last probe of the host's connection. */
  checked_at: number | null;
  /** When the current (or last) evacuation began. */
  evacuation_started_at: number | null;
  /** The host's own rescue image (path on the host), else VRP_RESCUE_IMAGE (migration 020). */
  rescue_image: string | null;
}

/** Whether a host takes new VMs. */
export type HostState = 'active' | 'draining' | 'evacuating';
export type HostHealth = 'up' | 'unreachable';
export type HostDriver = 'simulated' | 'libvirt';

/** A migration an evacuation queued (migration 018). */
export interface HostEvacuationMoveTable {
  host_id: string;
  service_id: string;
  job_id: string;
  queued_at: number;
}

/** A template's base image held by a libvirt host as a storage volume (migration 018). */
export interface HostImageTable {
  host_id: string;
  template_id: string;
  volume: string;
  sha256: string;
  size_bytes: number;
  created_at: number;
}

/** A simulated host that does not answer (drivers/simulated/outside.ts; migration 018). */
export interface SimHostOutageTable {
  host_id: string;
  since: number;
}

/** A simulated host whose storage has no room (migration 039; outside.storageFull). */
export interface SimStorageFullTable {
  host_id: string;
  since: number;
}

/** A libvirt VM's placement and size, for capacity accounting (libvirt itself holds the rest). */
export interface LibvirtVmTable {
  id: string;
  host_id: string;
  hostname: string;
  cpu: number;
  ram_gb: number;
  disk_gb: number;
  created_at: number;
  /** The host a migration reserved room on, until it ends (migration 018). */
  migrating_to: string | null;
  /** The interface's MAC address, no other VM's; NULL until first written for a VM stored before migration 036. */
  mac: string | null;
  /** When a create first had an answer from the VM's host about it (ms); NULL: none has (migration 037). */
  reached_at: number | null;
}

/** A VM's copy a host holds though the VM is elsewhere, until removed (migration 034). */
export interface LibvirtLeftoverTable {
  host_id: string;
  vm_id: string;
  since: number;
  /** Held by whoever removes it (a pass, a placement), until then (null: not held). */
  claimed_until: number | null;
  /** Who holds it; `running`: a copy found running, left for the operator. */
  claimed_by: string | null;
}

/** The room a copy under way holds on a place it writes to, while its job attempt's lease lasts (migration 038). */
export interface RoomClaimTable {
  id: string;
  /**
   * `pool:<host id>`: a host's storage pool; `fs:<machine>:<device>`: a filesystem of a worker
   * machine (its temporary directory's, and a pool's on that machine: PoolStorage.place).
   */
  place: string;
  bytes: number;
  job_id: string;
  /** The attempt of the job that holds it (`jobs.attempts` as that attempt's claim set it). */
  attempt: number;
  created_at: number;
  /** When its copy ended, or its run was found over (ms); NULL while under way. */
  released_at: number | null;
}

/** A place's last free figure read afresh (migration 038): claims released well before it show in every figure of it since. */
export interface RoomPlaceTable {
  place: string;
  /** When that read began (ms). */
  fresh_at: number;
}

export interface SimVmTable {
  id: string;
  host_id: string;
  power: string;
  cpu: number;
  ram_gb: number;
  disk_gb: number;
  used_disk_gb: number;
  ips: string;
  hostname: string;
  password_hash: string;
  /** Bumped by every write to the simulated disk; a restore brings the recorded value back. */
  content_generation: number;
  /** 1: the guest runs a guest agent (a live password reset reaches it); 0: it does not (migrations/012). */
  guest_agent: number;
  boot_count: number;
  created_at: number;
  updated_at: number;
  /** The host a migration reserved room on, until it ends (migration 018). */
  migrating_to: string | null;
  /** In rescue: SHA-256 of the rescue system's password; null when it runs its own system (migration 020). */
  rescue_password_hash: string | null;
  /** Interface counters (bytes into / out of the VM) as of `traffic_at`, for the boot `traffic_session` (migration 023). */
  traffic_in: number;
  traffic_out: number;
  traffic_at: number;
  /** `<boot_count>@<host_id>` the counters belong to; another one means they start from zero. */
  traffic_session: string;
  /** The interface's rate limit in Mbit/s, each direction; null: none. */
  bandwidth_mbit: number | null;
  /** Why the running VM is paused on a failed write to its disk; null: it is not (migration 039). */
  disk_error: 'no_space' | 'io_error' | null;
  /** 1: the host's boot starts the VM (libvirt's autostart mark); 0: it does not (migration 040). */
  start_with_host: number;
}

/** A simulated checkpoint: the base of the VM's next incremental export (migration 019). */
export interface SimCheckpointTable {
  vm_id: string;
  /** The backup id it was taken for. */
  name: string;
  /** The disk's content_generation when it was taken. */
  content_generation: number;
  created_at: number;
}

export interface SimBackupTable {
  id: string;
  vm_id: string;
  host_id: string;
  size_gb: number;
  content_generation: number;
  created_at: number;
}

/** A reseller's quota (migration 007); a null cap is unlimited, no row no quota at all. */
export interface ResellerQuotaTable {
  reseller_id: string;
  services: number | null;
  cpu: number | null;
  ram: number | null;
  hdd: number | null;
  ip: number | null;
  backup: number | null;
  updated_at: number;
}

/** A stretch of a service's life with the same resources, for usage reports (migration 007). */
export interface UsageIntervalTable {
  id: string;
  service_id: string;
  reseller_id: string;
  product_id: string;
  cpu: number;
  ram: number;
  hdd: number;
  /** Number of IP addresses. */
  ip: number;
  /** Backup space in GB (the service's allowance, not what its backups use). */
  backup: number;
  suspended: number;
  started_at: number;
  /** Null while open. */
  ended_at: number | null;
}

/**
 * An event of a reseller (docs/design/contract.md#events-and-webhooks), recorded in the transaction
 * of the change it tells.
 */
export interface EventTable {
  /** Feed order, assigned by the store: a reseller's events in commit order (see migrations/006). */
  seq: Generated<number>;
  /** UUIDv7: the event_id clients see, time-ordered. */
  id: string;
  reseller_id: string;
  type: EventType;
  /** JSON of the event's data. */
  data: string;
  created_at: number;
}

export interface WebhookTable {
  id: string;
  reseller_id: string;
  url: string;
  /** JSON array of the event types to send; null: all of them. */
  event_types: string | null;
  /** The `whsec_` secret, sealed by the secret box (auth/secret-box.ts). */
  secret_enc: string;
  created_at: number;
}

/** `pending` until a 2xx (`succeeded`) or the last attempt (`failed`). */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One event for one webhook: the durable delivery queue. */
export interface WebhookDeliveryTable {
  webhook_id: string;
  event_id: string;
  status: DeliveryStatus;
  /** Attempts started (counted when claimed). */
  attempts: number;
  /** When the next attempt is due (server clock). */
  next_attempt_at: number;
  /** The process sending it now, and until when (real time) it owns the attempt. */
  locked_by: string | null;
  locked_until: number | null;
  /** HTTP status of the last attempt, if it got one. */
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  finished_at: number | null;
}

/** Which process reconciles a host's power states now, and until when (migration 011). */
export interface ReconcilerLeaseTable {
  host_id: string;
  /** The reconciler holding the host; null once released. */
  locked_by: string | null;
  /** Real time (epoch ms) until which the holder owns it; another may claim it after. */
  locked_until: number;
}

/** The last interface counters read of a VM (migration 023). */
export interface TrafficSampleTable {
  /** The service id (the VM's name). */
  vm_id: string;
  host_id: string;
  /** The driver's name for the counters' life: another one means they started again from zero. */
  session: string;
  counter_in: number;
  counter_out: number;
  sampled_at: number;
  /** Moved by every sample: the condition of the next one, so two workers never count one difference twice. */
  seq: number;
}

/** Bytes a service sent and received on one UTC day (migration 023). */
export interface TrafficDayTable {
  service_id: string;
  /** The day's first ms (UTC). */
  day: number;
  bytes_in: number;
  bytes_out: number;
}

/** A service past its monthly traffic quota (migration 023): what was done, once per month. */
export interface TrafficMonthTable {
  service_id: string;
  /** The month's first ms (UTC). */
  month: number;
  action: 'throttle' | 'suspend';
  throttle_mbit: number | null;
  exceeded_at: number;
  /** When the next month lifted the throttle; null while it holds (and for a suspension). */
  lifted_at: number | null;
}

/** Bytes counted on a host since the start, for /metrics (migration 023). */
export interface TrafficHostTotalTable {
  host_id: string;
  bytes_in: number;
  bytes_out: number;
}

/** A notification to the operators (migration 027): the outbox and the record of what was notified. */
export interface NotificationTable {
  id: string;
  kind: NotificationKind;
  /** What it is about: a job's, host's, reseller's or webhook's id. */
  subject: string;
  /** One line for a person. */
  summary: string;
  /** JSON object: the details the operator webhook carries. */
  data: string;
  created_at: number;
  /** The batch it went out in; null until a flush takes it. */
  batch: number | null;
}

/** The batches formed so far (migration 027): one row, `flush`. */
export interface NotificationBatchTable {
  id: string;
  last_batch: number;
  last_batch_at: number;
}

/** Where notification batches go (migration 027): `email`, or an operator webhook by its id. */
export interface NotificationChannelTable {
  channel: string;
  kind: 'email' | 'webhook';
  /** The last batch this channel was sent (or had when it was added). */
  sent_batch: number;
  last_sent_at: number | null;
  /** Failed attempts since the last message that went out. */
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  locked_by: string | null;
  locked_until: number | null;
}

/** A lasting condition in force (migration 027), by key: notified when it starts and when it ends. */
export interface NotificationConditionTable {
  key: string;
  since: number;
}

/** An operator's webhook (migration 027): its secret sealed with the secret box. */
export interface OperatorWebhookTable {
  id: string;
  url: string;
  secret_enc: string;
  created_at: number;
}

export interface MetaTable {
  key: string;
  value: string;
}

/** A one-time link to a service's console in the browser, and the session it opened (migrations/020). */
export interface ServiceConsoleLinkTable {
  id: string;
  /** SHA-256 of the link's token (hex); the token itself is only in the link. */
  token_hash: string;
  service_id: string;
  reseller_id: string;
  created_at: number;
  /** The link opens until then (ms); once opened it never opens again. */
  open_until: number;
  opened_at: number | null;
  /** SHA-256 of the session's secret (hex), set when the link is opened. */
  session_hash: string | null;
  /**
   * The session ends then (ms). Ended earlier, for good, by a trigger (migrations/035) when the
   * service leaves `running`/`rescue`: `open_until` and `session_until` are 0 then.
   */
  session_until: number | null;
  /** Whose request made the link: `application` or `operator`; null before migrations/035. */
  client_kind: string | null;
  /** That client (an application's or an operator's); null before migrations/035. */
  client_id: string | null;
  /** Its token version then: the link holds while the client's is still that (revocations move it on). */
  client_version: number | null;
}

export interface Database {
  resellers: ResellerTable;
  clients: ClientTable;
  operators: OperatorTable;
  operator_clients: OperatorClientTable;
  audit_log: AuditLogTable;
  service_suspensions: ServiceSuspensionTable;
  products: ProductTable;
  plans: PlanTable;
  os_templates: OsTemplateTable;
  product_templates: ProductTemplateTable;
  services: ServiceTable;
  jobs: JobTable;
  idempotency_keys: IdempotencyKeyTable;
  backups: BackupTable;
  backup_schedules: BackupScheduleTable;
  schedule_slots: ScheduleSlotTable;
  ip_addresses: IpAddressTable;
  ip_pools: IpPoolTable;
  ip_pool_hosts: IpPoolHostTable;
  ipv6_prefixes: Ipv6PrefixTable;
  service_ptrs: ServicePtrTable;
  hypervisor_hosts: HypervisorHostTable;
  sim_vms: SimVmTable;
  libvirt_vms: LibvirtVmTable;
  libvirt_leftovers: LibvirtLeftoverTable;
  room_claims: RoomClaimTable;
  room_places: RoomPlaceTable;
  sim_backups: SimBackupTable;
  sim_checkpoints: SimCheckpointTable;
  meta: MetaTable;
  reseller_quotas: ResellerQuotaTable;
  usage_intervals: UsageIntervalTable;
  events: EventTable;
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  console_sessions: ConsoleSessionTable;
  operator_two_factor: OperatorTwoFactorTable;
  operator_recovery_codes: OperatorRecoveryCodeTable;
  reconciler_leases: ReconcilerLeaseTable;
  host_evacuation_moves: HostEvacuationMoveTable;
  host_images: HostImageTable;
  sim_host_outages: SimHostOutageTable;
  sim_storage_full: SimStorageFullTable;
  service_console_links: ServiceConsoleLinkTable;
  traffic_samples: TrafficSampleTable;
  traffic_days: TrafficDayTable;
  traffic_months: TrafficMonthTable;
  traffic_host_totals: TrafficHostTotalTable;
  notifications: NotificationTable;
  notification_batches: NotificationBatchTable;
  notification_channels: NotificationChannelTable;
  notification_conditions: NotificationConditionTable;
  operator_webhooks: OperatorWebhookTable;
}
