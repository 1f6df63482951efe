import type { Kysely } from 'kysely';
import { hostReachabilityNotification } from '../../domain/notifications.ts';
import type { Database, HostDriver } from '../schema.ts';
import { recordAudit, systemAudit } from './audit.ts';
import { queueNotification } from './notifications.ts';

/** Queues the operators' notification of a host's change of health, in the transaction that records it. */
async function notifyHealth(tx: Kysely<Database>, hostId: string, reachable: boolean, now: number) {
  const host = await tx
    .selectFrom('hypervisor_hosts')
    .select(['id', 'name'])
    .where('id', '=', hostId)
    .executeTakeFirst();
  if (host) await queueNotification(tx, hostReachabilityNotification(host, reachable), now);
}

/** Whether the host is marked unreachable (host health): its services' jobs wait for it. */
export async function isHostUnreachable(db: Kysely<Database>, hostId: string): Promise<boolean> {
  const row = await db
    .selectFrom('hypervisor_hosts')
    .select('health')
    .where('id', '=', hostId)
    .executeTakeFirst();
  return row?.health === 'unreachable';
}

/** A host as host health sees it. */
export interface ProbedHost {
  readonly id: string;
  readonly name: string;
  readonly health: 'up' | 'unreachable';
  readonly failingSince: number | null;
}

/** The driver's hosts, by name: those host health probes. */
export async function hostsToProbe(db: Kysely<Database>, driver: HostDriver): Promise<ProbedHost[]> {
  const rows = await db
    .selectFrom('hypervisor_hosts')
    .select(['id', 'name', 'health', 'failing_since'])
    .where('driver', '=', driver)
    .orderBy('name')
    .execute();
  return rows.map((r) => ({ id: r.id, name: r.name, health: r.health, failingSince: r.failing_since }));
}

/** Records that the host answered a probe: checked now; if it was failing, it is up again (audited once). */
export async function recordProbeAnswered(
  db: Kysely<Database>,
  hostId: string,
  now: number,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    await tx
      .updateTable('hypervisor_hosts')
      .set({ checked_at: now, failing_since: null })
      .where('id', '=', hostId)
      .where('health', '=', 'up')
      .execute();
    // Conditional on its health: of several processes, exactly one records the change.
    const back = await tx
      .updateTable('hypervisor_hosts')
      .set({ health: 'up', failing_since: null, checked_at: now })
      .where('id', '=', hostId)
      .where('health', '=', 'unreachable')
      .executeTakeFirst();
    if (back.numUpdatedRows === 0n) return false;
    await recordAudit(tx, systemAudit('host.reachable'), { target: { type: 'host', id: hostId } }, now);
    await notifyHealth(tx, hostId, true, now);
    // The jobs that waited for it are due now, not at their next look.
    await tx
      .updateTable('jobs')
      .set({ run_at: now })
      .where('status', '=', 'queued')
      .where('run_at', '>', now)
      .where('service_id', 'in', (eb) => eb.selectFrom('services').select('id').where('host_id', '=', hostId))
      .execute();
    return true;
  });
}

/**
 * Records a failed probe: checked now, failing since now if it was not failing already; once it
 * has failed for `downAfterMs`, unreachable (audited once: the change is a conditional update).
 * Returns whether this call marked it unreachable.
 */
export async function recordProbeFailed(
  db: Kysely<Database>,
  hostId: string,
  now: number,
  downAfterMs: number,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    await tx
      .updateTable('hypervisor_hosts')
      .set((eb) => ({ checked_at: now, failing_since: eb.fn.coalesce('failing_since', eb.val(now)) }))
      .where('id', '=', hostId)
      .execute();
    const down = await tx
      .updateTable('hypervisor_hosts')
      .set({ health: 'unreachable' })
      .where('id', '=', hostId)
      .where('health', '=', 'up')
      .where('failing_since', '<=', now - downAfterMs)
      .executeTakeFirst();
    if (down.numUpdatedRows === 0n) return false;
    await recordAudit(tx, systemAudit('host.unreachable'), { target: { type: 'host', id: hostId } }, now);
    await notifyHealth(tx, hostId, false, now);
    return true;
  });
}

/** Every host's health, by name, for the `vrp_host_up` gauge. */
export async function hostHealths(db: Kysely<Database>): Promise<{ name: string; up: boolean }[]> {
  const rows = await db.selectFrom('hypervisor_hosts').select(['name', 'health']).orderBy('name').execute();
  return rows.map((r) => ({ name: r.name, up: r.health === 'up' }));
}
