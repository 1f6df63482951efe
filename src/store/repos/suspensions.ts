import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';
import type { AuditActor } from './audit.ts';

/** One suspension of a service: asked when, by whom and why; lifted when and by whom (null while it lasts). */
export interface Suspension {
  readonly suspendedAt: number;
  readonly suspendedBy: AuditActor;
  readonly reason: string | null;
  readonly liftedAt: number | null;
  readonly liftedBy: AuditActor | null;
}

/**
 * Records that a suspension of the service was accepted, in the transaction that accepts it. A
 * suspension already open (a failed suspend job tried again) is the same suspension: nothing is
 * added.
 */
export async function recordSuspension(
  tx: Kysely<Database>,
  serviceId: string,
  by: AuditActor,
  reason: string | null,
  now: number,
): Promise<void> {
  const open = await tx
    .selectFrom('service_suspensions')
    .select('id')
    .where('service_id', '=', serviceId)
    .where('lifted_at', 'is', null)
    .executeTakeFirst();
  if (open) return;
  await tx
    .insertInto('service_suspensions')
    .values({
      id: randomUUID(),
      service_id: serviceId,
      suspended_at: now,
      suspended_by_type: by.type,
      suspended_by_id: by.id,
      suspended_by_name: by.name,
      reason,
      lifted_at: null,
      lifted_by_type: null,
      lifted_by_id: null,
      lifted_by_name: null,
    })
    .execute();
}

/** Records that the service's open suspension was lifted, in the transaction that accepts the unsuspend. */
export async function recordLift(
  tx: Kysely<Database>,
  serviceId: string,
  by: AuditActor,
  now: number,
): Promise<void> {
  await tx
    .updateTable('service_suspensions')
    .set({ lifted_at: now, lifted_by_type: by.type, lifted_by_id: by.id, lifted_by_name: by.name })
    .where('service_id', '=', serviceId)
    .where('lifted_at', 'is', null)
    .execute();
}

/** The service's suspensions, newest first. */
export async function listSuspensions(db: Kysely<Database>, serviceId: string): Promise<Suspension[]> {
  const rows = await db
    .selectFrom('service_suspensions')
    .selectAll()
    .where('service_id', '=', serviceId)
    .orderBy('suspended_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => ({
    suspendedAt: r.suspended_at,
    suspendedBy: { type: r.suspended_by_type, id: r.suspended_by_id, name: r.suspended_by_name },
    reason: r.reason,
    liftedAt: r.lifted_at,
    liftedBy:
      r.lifted_at !== null && r.lifted_by_type !== null && r.lifted_by_id !== null
        ? { type: r.lifted_by_type, id: r.lifted_by_id, name: r.lifted_by_name }
        : null,
  }));
}
