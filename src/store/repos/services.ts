import type { Kysely, Updateable } from 'kysely';
import type { PasswordApplies } from '../../domain/passwords.ts';
import type { ServiceError } from '../../domain/service-error.ts';
import type { PowerStatus, StableStatus, Status } from '../../domain/status-machine.ts';
import type { HotReads, ServiceStatusRow } from '../hot-reads.ts';
import { insertRow } from '../insert-row.ts';
import { stringList } from '../json-columns.ts';
import { prepare, slot } from '../prepared.ts';
import type { Database, ServiceTable } from '../schema.ts';

export interface Service {
  readonly id: string;
  readonly resellerId: string;
  readonly clientId: string;
  readonly productId: string;
  readonly templateId: string;
  readonly domainName: string;
  readonly username: string;
  readonly passwordEnc: string;
  readonly cpu: number;
  readonly ram: number;
  readonly hdd: number;
  readonly ipCount: number;
  readonly backup: number;
  readonly status: Status;
  readonly resumeStatus: PowerStatus | null;
  readonly suspendReason: string | null;
  readonly projectedStatus: StableStatus;
  readonly projectedResume: PowerStatus | null;
  readonly pendingJobs: number;
  readonly jobSeq: number;
  readonly activeJobId: string | null;
  readonly hostId: string | null;
  readonly ips: readonly string[];
  readonly diskRevision: number | null;
  /** Whether the last password reset reached the running guest (`now`) or waits for its next boot. */
  readonly passwordApplies: PasswordApplies | null;
  /** Why it is `failed` (set when it became so; cleared when a job leaves it otherwise). */
  readonly error: ServiceError | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly terminatedAt: number | null;
  /** The OpenSSH public keys installed for root (details show their fingerprints only). */
  readonly sshKeys: readonly string[];
  /** When the service entered rescue; null when it is not in rescue. */
  readonly rescueSince: number | null;
}

export type ServiceRow = ServiceTable;
export type ServicePatch = Updateable<ServiceTable>;

/**
 * What a job's work changed on a service, in the domain's words (jobs/tasks return it);
 * serviceChangeColumns is the one place that turns it into columns.
 */
export interface ServiceChange {
  readonly hostId?: string | null;
  readonly ips?: readonly string[];
  readonly diskRevision?: number | null;
  readonly passwordEnc?: string;
  readonly passwordApplies?: PasswordApplies;
  readonly suspendReason?: string | null;
  readonly terminatedAt?: number;
  readonly cpu?: number;
  readonly ram?: number;
  readonly hdd?: number;
  readonly ipCount?: number;
  readonly backup?: number;
  readonly templateId?: string;
  /** The OpenSSH public keys installed for root. */
  readonly sshKeys?: readonly string[];
  /** When the service entered rescue; null when it left. */
  readonly rescueSince?: number | null;
}

/** The columns of a ServiceChange (only the fields it sets). */
export function serviceChangeColumns(c: ServiceChange): ServicePatch {
  const set: ServicePatch = {};
  if (c.hostId !== undefined) set.host_id = c.hostId;
  if (c.ips !== undefined) set.ips = JSON.stringify(c.ips);
  if (c.diskRevision !== undefined) set.disk_revision = c.diskRevision;
  if (c.passwordEnc !== undefined) set.password_enc = c.passwordEnc;
  if (c.passwordApplies !== undefined) set.password_applies = c.passwordApplies;
  if (c.suspendReason !== undefined) set.suspend_reason = c.suspendReason;
  if (c.terminatedAt !== undefined) set.terminated_at = c.terminatedAt;
  if (c.cpu !== undefined) set.cpu = c.cpu;
  if (c.ram !== undefined) set.ram = c.ram;
  if (c.hdd !== undefined) set.hdd = c.hdd;
  if (c.ipCount !== undefined) set.ip_count = c.ipCount;
  if (c.backup !== undefined) set.backup = c.backup;
  if (c.templateId !== undefined) set.template_id = c.templateId;
  if (c.sshKeys !== undefined) set.ssh_keys = JSON.stringify(c.sshKeys);
  if (c.rescueSince !== undefined) set.rescue_since = c.rescueSince;
  return set;
}

/** What a status poll shows of a service. */
export type ServiceStatus = Pick<
  Service,
  'id' | 'status' | 'projectedStatus' | 'projectedResume' | 'pendingJobs'
>;

/** The status part of a row: all a status poll reads (the covering index's columns). */
function toServiceStatus(r: ServiceStatusRow): ServiceStatus {
  return {
    id: r.id,
    status: r.status,
    projectedStatus: r.projected_status,
    projectedResume: r.projected_resume,
    pendingJobs: r.pending_jobs,
  };
}

/** The reason stored on a service row, if any. */
export function serviceErrorOf(r: Pick<ServiceRow, 'error_code' | 'error_message'>): ServiceError | null {
  return r.error_code === null ? null : { code: r.error_code, message: r.error_message ?? '' };
}

/** The columns that record why a service is failed; `serviceErrorColumns(null)` clears them. */
export function serviceErrorColumns(
  error: ServiceError | null,
): Pick<ServicePatch, 'error_code' | 'error_message'> {
  return { error_code: error?.code ?? null, error_message: error?.message ?? null };
}

export function toService(r: ServiceRow): Service {
  return {
    ...toServiceStatus(r),
    resellerId: r.reseller_id,
    clientId: r.client_id,
    productId: r.product_id,
    templateId: r.template_id,
    domainName: r.domain_name,
    username: r.username,
    passwordEnc: r.password_enc,
    cpu: r.cpu,
    ram: r.ram,
    hdd: r.hdd,
    ipCount: r.ip_count,
    backup: r.backup,
    resumeStatus: r.resume_status,
    suspendReason: r.suspend_reason,
    jobSeq: r.job_seq,
    activeJobId: r.active_job_id,
    hostId: r.host_id,
    ips: JSON.parse(r.ips) as string[],
    diskRevision: r.disk_revision,
    passwordApplies: r.password_applies,
    error: serviceErrorOf(r),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    terminatedAt: r.terminated_at,
    sshKeys: stringList(r.ssh_keys),
    rescueSince: r.rescue_since,
  };
}

/** The strings of a JSON array column (anything else in it is dropped). */
/** What an order decides of a new service; the rest starts empty (pending, no VM, no job). */
export type NewService = Pick<
  Service,
  | 'id'
  | 'resellerId'
  | 'clientId'
  | 'productId'
  | 'templateId'
  | 'domainName'
  | 'username'
  | 'passwordEnc'
  | 'cpu'
  | 'ram'
  | 'hdd'
  | 'ipCount'
  | 'backup'
> & { readonly now: number; readonly sshKeys?: readonly string[] };

/** The row of a new service: the one place a whole services row is built. */
export function newServiceRow(s: NewService): ServiceRow {
  return {
    id: s.id,
    reseller_id: s.resellerId,
    client_id: s.clientId,
    product_id: s.productId,
    template_id: s.templateId,
    domain_name: s.domainName,
    username: s.username,
    password_enc: s.passwordEnc,
    cpu: s.cpu,
    ram: s.ram,
    hdd: s.hdd,
    ip_count: s.ipCount,
    backup: s.backup,
    status: 'pending',
    resume_status: null,
    suspend_reason: null,
    projected_status: 'pending',
    projected_resume: null,
    pending_jobs: 0,
    job_seq: 0,
    active_job_id: null,
    host_id: null,
    ips: '[]',
    disk_revision: null,
    password_applies: null,
    error_code: null,
    error_message: null,
    created_at: s.now,
    updated_at: s.now,
    terminated_at: null,
    ssh_keys: JSON.stringify(s.sshKeys ?? []),
    rescue_since: null,
  };
}

/** Inserts of new services, group-committed (group-insert.ts). */
export async function insertService(db: Kysely<Database>, row: ServiceRow): Promise<void> {
  await insertRow(db, 'services', row);
}

/** The service if it exists and belongs to the reseller; another reseller's service is not found. */
export async function findOwnedService(
  reads: HotReads,
  resellerId: string,
  id: string,
): Promise<Service | undefined> {
  const row = await reads.ownedService(resellerId, id);
  return row && toService(row);
}

/** The status of the reseller's service, read from the covering index only; undefined if not theirs. */
export async function findOwnedServiceStatus(
  reads: HotReads,
  resellerId: string,
  id: string,
): Promise<ServiceStatus | undefined> {
  const r = await reads.ownedServiceStatus(resellerId, id);
  return r && toServiceStatus(r);
}

const serviceById = prepare({ id: slot<string>() }, (db, s) =>
  db.selectFrom('services').selectAll().where('id', '=', s.id),
);

export async function findService(db: Kysely<Database>, id: string): Promise<Service | undefined> {
  const row = await serviceById.first(db, { id });
  return row && toService(row);
}
