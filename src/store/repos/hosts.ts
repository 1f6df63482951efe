import type { Kysely } from 'kysely';
import { roundGb } from '../../domain/sizes.ts';
import type { Database, HostDriver, HostState } from '../schema.ts';
import { type AuditContext, recordAudit } from './audit.ts';

export type { HostState };

/** A host as the operator sees it: its capacity, what is reserved on it, its VMs. */
export interface HostView {
  readonly id: string;
  readonly state: HostState;
  readonly capacity: {
    readonly cpu: number;
    readonly ramGb: number;
    readonly diskGb: number;
    readonly backupGb: number;
  };
  readonly used: {
    readonly cpu: number;
    readonly ramGb: number;
    readonly diskGb: number;
    readonly backupGb: number;
  };
  /** VMs placed on it. */
  readonly services: number;
}

/** The table each driver records its VMs in (drivers/hosts.ts, PlacedVm). */
export type VmTable = 'sim_vms' | 'libvirt_vms';

/**
 * The hosts `ids` (the driver's configured hosts, in that order) as stored, with the VMs each
 * holds counted in the driver's VM table (index `..._vms_host`, migration 009). A configured
 * host the store does not have yet (no driver has started since it was configured) is left out.
 */
export async function listHosts(
  db: Kysely<Database>,
  ids: readonly string[],
  vms: VmTable,
): Promise<HostView[]> {
  if (ids.length === 0) return [];
  const [rows, counts] = await Promise.all([
    db.selectFrom('hypervisor_hosts').selectAll().where('id', 'in', ids).execute(),
    db
      .selectFrom(vms as 'sim_vms')
      .select(['host_id', (eb) => eb.fn.countAll<number | string>().as('n')])
      .where('host_id', 'in', ids)
      .groupBy('host_id')
      .execute(),
  ]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const count = new Map(counts.map((c) => [c.host_id, Number(c.n)]));
  return ids.flatMap((id) => {
    const r = byId.get(id);
    if (!r) return [];
    return [
      {
        id: r.id,
        state: r.state,
        capacity: { cpu: r.cpu, ramGb: r.ram_gb, diskGb: r.disk_gb, backupGb: r.backup_gb },
        used: {
          cpu: r.used_cpu,
          ramGb: r.used_ram_gb,
          diskGb: r.used_disk_gb,
          // Rounded again on reading: rows summed before the sum was rounded may have drifted.
          backupGb: roundGb(r.used_backup_gb),
        },
        services: count.get(id) ?? 0,
      },
    ];
  });
}

/**
 * Sets a host's state (drain: no new placements; activate: placements again) and records the
 * change in the same transaction. False if the store has no such host.
 */
export async function setHostState(
  db: Kysely<Database>,
  id: string,
  state: HostState,
  now: number,
  audit: AuditContext,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx.updateTable('hypervisor_hosts').set({ state }).where('id', '=', id).executeTakeFirst();
    if (r.numUpdatedRows === 0n) return false;
    await recordAudit(tx, audit, { target: { type: 'host', id } }, now);
    return true;
  });
}

/** A host's state, or undefined if the store has no such host. */
export async function findHostState(db: Kysely<Database>, id: string): Promise<HostState | undefined> {
  const row = await db.selectFrom('hypervisor_hosts').select('state').where('id', '=', id).executeTakeFirst();
  return row?.state;
}

/** The ids of `driver`'s hosts that answer, by name: those the reconciler compares with the store. */
export async function reachableHostIds(db: Kysely<Database>, driver: HostDriver): Promise<string[]> {
  const rows = await db
    .selectFrom('hypervisor_hosts')
    .select('id')
    .where('driver', '=', driver)
    .where('health', '=', 'up')
    .orderBy('name')
    .execute();
  return rows.map((r) => r.id);
}
