import type { Kysely } from 'kysely';
import type { Database, HostDriver } from '../schema.ts';
import { recordAudit, systemAudit } from './audit.ts';

/** An evacuation as its moves stand: how many moved, failed, are under way, and what is left. */
export interface EvacuationState {
  /**
   * Moves whose job is queued or running, an earlier evacuation's too (the host was drained or
   * activated and evacuated again while they ran): they still take a place of the concurrency.
   */
  readonly inFlight: number;
  readonly moved: number;
  readonly failed: number;
  /**
   * Services on the host with a VM that this evacuation has not queued a move for yet, and no
   * earlier evacuation's move is under way for (once that ends, one that failed is tried again).
   */
  readonly unmoved: readonly string[];
  /**
   * Services whose VM is arriving on the host: a create placed there, or a migration to it,
   * whose job is queued or running (the service records its host only when that job ends).
   */
  readonly arriving: readonly string[];
  /**
   * VMs still on the host that no move is for: those of services whose move failed, and of
   * services without a status to move from (a create that failed and kept its VM there: the
   * service `failed`, until it is created again or terminated).
   */
  readonly left: number;
}

/** The driver's hosts being evacuated. */
export async function evacuatingHostIds(db: Kysely<Database>, driver: HostDriver): Promise<string[]> {
  const rows = await db
    .selectFrom('hypervisor_hosts')
    .select('id')
    .where('driver', '=', driver)
    .where('state', '=', 'evacuating')
    .orderBy('name')
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Locks the host's row for the rest of the transaction (PostgreSQL: `lock`), so two processes
 * count and queue one after the other, and returns when its current evacuation started; undefined
 * if it is not being evacuated (any more).
 */
export async function lockEvacuatingHost(
  tx: Kysely<Database>,
  hostId: string,
  lock: boolean,
): Promise<{ readonly startedAt: number } | undefined> {
  const host = await tx
    .selectFrom('hypervisor_hosts')
    .select(['state', 'evacuation_started_at'])
    .where('id', '=', hostId)
    .$if(lock, (q) => q.forUpdate())
    .executeTakeFirst();
  if (host?.state !== 'evacuating') return undefined;
  return { startedAt: host.evacuation_started_at ?? 0 };
}

/** Where the evacuation of `hostId` begun at `startedAt` stands. */
export async function evacuationState(
  tx: Kysely<Database>,
  hostId: string,
  startedAt: number,
): Promise<EvacuationState> {
  const all = await tx
    .selectFrom('host_evacuation_moves as m')
    .leftJoin('jobs as j', 'j.id', 'm.job_id')
    .select(['m.service_id', 'm.queued_at', 'j.status'])
    .where('m.host_id', '=', hostId)
    .execute();
  const underWay = all.filter((m) => m.status === 'queued' || m.status === 'running');
  const moves = all.filter((m) => m.queued_at >= startedAt);
  // Services to move: a pending or terminated one has no VM, and a failed one has nothing to move
  // from (its create gave everything back, its VM vanished, or it kept its VM: then it is left).
  const onHost = await tx
    .selectFrom('services')
    .select('id')
    .where('host_id', '=', hostId)
    .where('status', 'not in', ['pending', 'failed', 'terminated'])
    .orderBy('id')
    .execute();
  const moved = new Set([...moves, ...underWay].map((m) => m.service_id));
  const unmoved = onHost.map((s) => s.id).filter((id) => !moved.has(id));
  const vms = await vmsBoundFor(tx, hostId);
  const moving = new Set([...underWay.map((m) => m.service_id), ...unmoved]);
  return {
    left: vms.filter((vm) => vm.host_id === hostId && !moving.has(vm.id)).length,
    arriving: await arrivingOn(tx, hostId, vms),
    inFlight: underWay.length,
    moved: moves.filter((m) => m.status === 'succeeded').length,
    // A move whose job is gone (pruned) ended long ago; the service tells whether it moved.
    failed: moves.filter((m) => m.status === 'failed' || m.status === 'skipped').length,
    unmoved,
  };
}

/**
 * The VMs placed on `hostId` or reserved there by a migration, read from both drivers' rows
 * (`sim_vms`, `libvirt_vms`: the placement and a migration's reservation are written there, with
 * the host's room), as deleteHost does; a host is one driver's, so at most one has rows. Each
 * through its index (migration 033), not from every service.
 */
async function vmsBoundFor(
  tx: Kysely<Database>,
  hostId: string,
): Promise<{ readonly id: string; readonly host_id: string }[]> {
  const perDriver = await Promise.all(
    (['sim_vms', 'libvirt_vms'] as const).map((table) =>
      tx
        .selectFrom(table)
        .select(['id', 'host_id'])
        .where((eb) => eb.or([eb('host_id', '=', hostId), eb('migrating_to', '=', hostId)]))
        .execute(),
    ),
  );
  return perDriver.flat();
}

/**
 * The services whose VM is arriving on `hostId`: of `vms` (vmsBoundFor), those whose service
 * records another host, or none yet, while a create or migrate job of theirs is queued or running.
 */
async function arrivingOn(
  tx: Kysely<Database>,
  hostId: string,
  vms: readonly { readonly id: string }[],
): Promise<string[]> {
  if (vms.length === 0) return [];
  const rows = await tx
    .selectFrom('services as s')
    .select('s.id')
    .where(
      's.id',
      'in',
      vms.map((vm) => vm.id),
    )
    .where((eb) => eb.or([eb('s.host_id', 'is', null), eb('s.host_id', '!=', hostId)]))
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('jobs as j')
          .select('j.id')
          .whereRef('j.service_id', '=', 's.id')
          .where('j.action', 'in', ['create', 'migrate'])
          .where('j.status', 'in', ['queued', 'running']),
      ),
    )
    .orderBy('s.id')
    .execute();
  return rows.map((r) => r.id);
}

/** Records that the evacuation queued a move of `serviceId` (replacing an earlier evacuation's). */
export async function recordMove(
  tx: Kysely<Database>,
  move: { hostId: string; serviceId: string; jobId: string; now: number },
): Promise<void> {
  await tx
    .insertInto('host_evacuation_moves')
    .values({ host_id: move.hostId, service_id: move.serviceId, job_id: move.jobId, queued_at: move.now })
    .onConflict((oc) =>
      oc.columns(['host_id', 'service_id']).doUpdateSet({ job_id: move.jobId, queued_at: move.now }),
    )
    .execute();
}

/**
 * Ends the evacuation: the host is `draining` (it takes no new servers), and the audit log says
 * how it went: outcome `ok`; `moves_failed` when some moves failed and their services stayed;
 * `servers_left` when no move failed but VMs are still on the host that no move was for (a failed
 * create's: the host cannot be removed until they are terminated).
 */
export async function endEvacuation(
  tx: Kysely<Database>,
  hostId: string,
  state: EvacuationState,
  now: number,
): Promise<void> {
  const r = await tx
    .updateTable('hypervisor_hosts')
    .set({ state: 'draining' })
    .where('id', '=', hostId)
    .where('state', '=', 'evacuating')
    .executeTakeFirst();
  if (r.numUpdatedRows === 0n) return;
  await recordAudit(
    tx,
    systemAudit('host.evacuated'),
    { target: { type: 'host', id: hostId } },
    now,
    state.failed > 0 ? 'moves_failed' : state.left > 0 ? 'servers_left' : 'ok',
  );
}
