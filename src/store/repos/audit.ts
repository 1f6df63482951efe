import type { Insertable, Kysely } from 'kysely';
import { createMonotonicUuidv7 } from '../../domain/ids.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import type { AuditActorType, AuditLogTable, Database } from '../schema.ts';

export type { AuditActorType } from '../schema.ts';

/** Entry ids: time-ordered, and in the order they were made within a process, also in one millisecond. */
const nextAuditId = createMonotonicUuidv7(() => randomPoolBytes(16));

/**
 * Who acts: an application (its client_id), an operator (its id), the `vrp` command (the local
 * user) or the product by itself (`system`), with the name a person knows it by.
 */
export interface AuditActor {
  readonly type: AuditActorType;
  readonly id: string;
  /** Operator name, `reseller / application`, the local user, `system`; null only in entries older than names. */
  readonly name: string | null;
}

/** The credential a request came with: an operator's client, a console session or an application. */
export interface AuditCredential {
  readonly type: 'operator_client' | 'console_session' | 'application';
  /** The client id, or the console session's id (a hash of its secret): never a secret. */
  readonly id: string;
}

/**
 * What a state-changing operation needs to record itself: who asks, in which request, for what.
 * Routes build it (http/audit.ts) and pass it into the domain operation, which writes the entry
 * in the transaction of its change; the CLI builds one with actor `cli`.
 */
export interface AuditContext {
  readonly actor: AuditActor;
  /** The request's X-Request-Id; null for the CLI. */
  readonly requestId: string | null;
  /** `object.verb`: `service.order`, `service.start`, `backup.restore`, `client.rotate_secret`... */
  readonly action: string;
  /** What the request authenticated with; absent for the CLI and the system. */
  readonly credential?: AuditCredential | null;
  /** The caller's address (http/audit-actor.ts); absent for the CLI and the system. */
  readonly address?: string | null;
}

/** The actor of what the product does on its own (host health, evacuations, traffic limits). */
export const SYSTEM_ACTOR: AuditActor = { type: 'system', id: 'system', name: 'system' };

/** The product acting on its own through one of its parts (`scheduler`, `evacuation`...): who started a job. */
export function systemPart(part: string): AuditActor {
  return { type: 'system', id: part, name: part };
}

/** The audit context of what the product does on its own. */
export function systemAudit(action: string): AuditContext {
  return { actor: SYSTEM_ACTOR, requestId: null, action };
}

/** What an entry is about. Ids only: never a secret, a password or a request body. */
export interface AuditSubject {
  /** The object acted on: a service, backup, backup_schedule, reseller, client or operator. */
  readonly target?: { readonly type: string; readonly id: string };
  /** The service concerned (for its backups and schedules too), so its history can be listed. */
  readonly serviceId?: string;
  readonly resellerId?: string;
  /** The reason given with the action (a suspension's), if any. */
  readonly reason?: string | null;
}

/** The outcome of an accepted change. A refused request records its error code instead. */
const AUDIT_OK = 'ok';

/** One entry as read back. */
export interface AuditEntry {
  readonly id: string;
  readonly createdAt: number;
  readonly actor: AuditActor;
  readonly action: string;
  readonly target: { readonly type: string; readonly id: string } | null;
  readonly serviceId: string | null;
  /** The domain of the entry's service, so that a person reading the log knows which it is. */
  readonly serviceDomain: string | null;
  readonly resellerId: string | null;
  readonly outcome: string;
  readonly requestId: string | null;
  readonly credential: AuditCredential | null;
  readonly address: string | null;
  readonly reason: string | null;
}

/** The row of an entry, for writers that insert it with others (the order's group commit). */
export function auditRow(
  audit: AuditContext,
  subject: AuditSubject,
  now: number,
  outcome: string = AUDIT_OK,
): Insertable<AuditLogTable> {
  return {
    // Time-ordered by the real time, as services' ids: lists page by it.
    id: nextAuditId(Date.now()),
    created_at: now,
    actor_type: audit.actor.type,
    actor_id: audit.actor.id,
    action: audit.action,
    target_type: subject.target?.type ?? null,
    target_id: subject.target?.id ?? null,
    service_id: subject.serviceId ?? null,
    reseller_id: subject.resellerId ?? null,
    outcome,
    request_id: audit.requestId,
    actor_name: audit.actor.name,
    credential_type: audit.credential?.type ?? null,
    credential_id: audit.credential?.id ?? null,
    source_address: audit.address ?? null,
    reason: subject.reason ?? null,
  };
}

/**
 * Records an entry. Called with the transaction of the change it records, so that the entry
 * exists exactly when the change does: one more insert in a transaction already open.
 */
export async function recordAudit(
  db: Kysely<Database>,
  audit: AuditContext,
  subject: AuditSubject,
  now: number,
  outcome: string = AUDIT_OK,
): Promise<void> {
  await db
    .insertInto('audit_log')
    .values(auditRow(audit, subject, now, outcome))
    .execute();
}

export interface AuditQuery {
  /** The id of the last entry of the previous page: the list goes on after it, in its order. */
  readonly after?: string;
  readonly actor?: { readonly type: AuditActorType; readonly id?: string };
  /** Entries of this action exactly (`service.suspend`). */
  readonly action?: string;
  /** Entries whose actor had this name exactly. */
  readonly actorName?: string;
  readonly serviceId?: string;
  readonly resellerId?: string;
  /** 1..1000. */
  readonly limit: number;
  /** Newest first (the default: what a person looks for) or oldest first (an export that follows along). */
  readonly order?: 'newest' | 'oldest';
}

type Row = Database['audit_log'] & { service_domain: string | null };
const toEntry = (r: Row): AuditEntry => ({
  id: r.id,
  createdAt: r.created_at,
  actor: { type: r.actor_type, id: r.actor_id, name: r.actor_name },
  action: r.action,
  target: r.target_type !== null && r.target_id !== null ? { type: r.target_type, id: r.target_id } : null,
  serviceId: r.service_id,
  serviceDomain: r.service_domain,
  resellerId: r.reseller_id,
  outcome: r.outcome,
  requestId: r.request_id,
  credential: credentialOf(r.credential_type, r.credential_id),
  address: r.source_address,
  reason: r.reason,
});

function credentialOf(type: string | null, id: string | null): AuditCredential | null {
  if (id === null) return null;
  if (type === 'operator_client' || type === 'console_session' || type === 'application') return { type, id };
  return null;
}

/**
 * Entries matching every filter given, a page of `limit` in id order (time order). Each filter
 * has an index that ends with the id (migrations/008, 026), so a page is an index range, not a scan.
 */
export async function listAuditEntries(db: Kysely<Database>, q: AuditQuery): Promise<AuditEntry[]> {
  const newest = (q.order ?? 'newest') === 'newest';
  let query = db
    .selectFrom('audit_log as a')
    .leftJoin('services as s', 's.id', 'a.service_id')
    .selectAll('a')
    .select('s.domain_name as service_domain');
  if (q.actor) {
    query = query.where('a.actor_type', '=', q.actor.type);
    if (q.actor.id !== undefined) query = query.where('a.actor_id', '=', q.actor.id);
  }
  if (q.action !== undefined) query = query.where('a.action', '=', q.action);
  if (q.actorName !== undefined) query = query.where('a.actor_name', '=', q.actorName);
  if (q.serviceId !== undefined) query = query.where('a.service_id', '=', q.serviceId);
  if (q.resellerId !== undefined) query = query.where('a.reseller_id', '=', q.resellerId);
  if (q.after !== undefined) query = query.where('a.id', newest ? '<' : '>', q.after);
  const rows = await query
    .orderBy('a.id', newest ? 'desc' : 'asc')
    .limit(q.limit)
    .execute();
  return rows.map(toEntry);
}
