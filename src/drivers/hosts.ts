import { type Insertable, type Kysely, sql } from 'kysely';
import { shrinksDisk } from '../domain/orders.ts';
import { GB_PARTS } from '../domain/sizes.ts';
import { insertRow } from '../store/insert-row.ts';
import type { Database, LibvirtVmTable, SimVmTable } from '../store/schema.ts';
import { DriverError } from './driver.ts';

export interface Need {
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
}

/** A host as configured: its capacity (backup storage only where the driver keeps backups on it). */
export interface HostCapacity {
  readonly id: string;
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
  readonly backupGb?: number;
}

/** Brings the configured hosts into the store: capacities as configured, usage as it was. */
export async function syncHosts(db: Kysely<Database>, hosts: readonly HostCapacity[]): Promise<void> {
  for (const host of hosts) {
    const h = { ...host, backupGb: host.backupGb ?? 0 };
    await db
      .insertInto('hypervisor_hosts')
      .values({
        id: h.id,
        cpu: h.cpu,
        ram_gb: h.ramGb,
        disk_gb: h.diskGb,
        backup_gb: h.backupGb,
        used_cpu: 0,
        used_ram_gb: 0,
        used_disk_gb: 0,
        used_backup_gb: 0,
        state: 'active',
      })
      .onConflict((oc) =>
        oc
          .column('id')
          .doUpdateSet({ cpu: h.cpu, ram_gb: h.ramGb, disk_gb: h.diskGb, backup_gb: h.backupGb }),
      )
      .execute();
  }
}

/** A driver's row of a VM, without the host it is placed on (placeVm writes it). */
export type VmRecord =
  | { readonly table: 'sim_vms'; readonly row: Omit<Insertable<SimVmTable>, 'host_id'> & { id: string } }
  | {
      readonly table: 'libvirt_vms';
      readonly row: Omit<Insertable<LibvirtVmTable>, 'host_id'> & { id: string };
    };

/**
 * Reserves room on the host with the most free RAM that fits, among `hostIds` (the driver's
 * configured hosts; rows of hosts no longer configured stay in the store for the VMs on them)
 * that are active: a host the operator drains takes no new VM, on every driver, since both
 * place through here. The reservation is a conditional update, on the room and on the state, so
 * concurrent placements (workers, processes) never overbook a host nor place on one drained
 * meanwhile.
 *
 * The driver's row of the VM (`vm`) is written on each host tried, before that host's
 * reservation (inserted on the first, moved to the next): the host's row, whose lock every
 * placement on the host waits for, is then the transaction's last write, and its lock is held
 * from there to the commit only (held across the VM's insert too, placements on one host took
 * turns for an extra round trip each: bench/FINDINGS.md).
 */
export async function placeVm(
  db: Kysely<Database>,
  need: Need,
  hostIds: readonly string[],
  vm: VmRecord,
): Promise<string> {
  const hosts =
    hostIds.length === 0
      ? []
      : await db
          .selectFrom('hypervisor_hosts')
          .selectAll()
          .where('id', 'in', hostIds)
          .where('state', '=', 'active')
          .execute();
  const fitting = hosts
    .filter(
      (h) =>
        h.used_cpu + need.cpu <= h.cpu &&
        h.used_ram_gb + need.ramGb <= h.ram_gb &&
        h.used_disk_gb + need.diskGb <= h.disk_gb,
    )
    .sort((a, b) => b.ram_gb - b.used_ram_gb - (a.ram_gb - a.used_ram_gb));
  let written = false;
  for (const h of fitting) {
    if (written) await db.updateTable(vm.table).set({ host_id: h.id }).where('id', '=', vm.row.id).execute();
    else await insertRow(db, vm.table, { ...vm.row, host_id: h.id } as Insertable<Database[typeof vm.table]>);
    written = true;
    if (await reserve(db, h.id, need, { activeOnly: true })) return h.id;
  }
  throw new DriverError(
    `No host has room for ${need.cpu} vCPU, ${need.ramGb} GB RAM, ${need.diskGb} GB disk`,
    {
      transient: false,
    },
  );
}

/**
 * Adds `delta` to a host's reservation; false if an amount that grows does not fit (or, with
 * `activeOnly`, a new placement, if the host is draining). Amounts that shrink never stop it, so
 * room given back is given back even on a host configured below its use.
 */
async function reserve(
  db: Kysely<Database>,
  hostId: string,
  delta: Need,
  options: { readonly activeOnly?: boolean } = {},
): Promise<boolean> {
  const r = await db
    .updateTable('hypervisor_hosts')
    .set((eb) => ({
      used_cpu: eb('used_cpu', '+', delta.cpu),
      used_ram_gb: eb('used_ram_gb', '+', delta.ramGb),
      used_disk_gb: eb('used_disk_gb', '+', delta.diskGb),
    }))
    .where('id', '=', hostId)
    .where((eb) =>
      eb.and([
        ...(options.activeOnly ? [eb('state', '=', 'active')] : []),
        ...(delta.cpu > 0 ? [eb(eb('used_cpu', '+', delta.cpu), '<=', eb.ref('cpu'))] : []),
        ...(delta.ramGb > 0 ? [eb(eb('used_ram_gb', '+', delta.ramGb), '<=', eb.ref('ram_gb'))] : []),
        ...(delta.diskGb > 0 ? [eb(eb('used_disk_gb', '+', delta.diskGb), '<=', eb.ref('disk_gb'))] : []),
      ]),
    )
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Gives a VM's room back to its host, unconditionally. */
export async function free(db: Kysely<Database>, hostId: string, need: Need): Promise<void> {
  await reserve(db, hostId, { cpu: -need.cpu, ramGb: -need.ramGb, diskGb: -need.diskGb });
}

/** Takes backup storage on a host; false if it is full. A negative size frees it, unconditionally. */
export async function reserveBackupSpace(
  db: Kysely<Database>,
  hostId: string,
  sizeGb: number,
): Promise<boolean> {
  // The sum rounded to the hundredth in SQL (round() with no digits is the one both stores
  // have for double precision), so that the stored use does not drift (domain/sizes.ts).
  const parts = sql.lit(GB_PARTS);
  const sum = sql<number>`round((used_backup_gb + ${sizeGb}) * ${parts}) / ${parts}`;
  let q = db.updateTable('hypervisor_hosts').set({ used_backup_gb: sum }).where('id', '=', hostId);
  if (sizeGb > 0) q = q.where((eb) => eb(sum, '<=', eb.ref('backup_gb')));
  const r = await q.executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Gives a backup's storage back to its host, unconditionally. */
export async function freeBackupSpace(db: Kysely<Database>, hostId: string, sizeGb: number): Promise<void> {
  await reserveBackupSpace(db, hostId, -sizeGb);
}

/** What both drivers record of a VM's place and size (tables `sim_vms` and `libvirt_vms`). */
export interface PlacedVm {
  readonly id: string;
  readonly host_id: string;
  readonly cpu: number;
  readonly ram_gb: number;
  readonly disk_gb: number;
}

/**
 * Resizes a VM's record and its reservation on its host together, in the caller's transaction:
 * from the size `vm` was read with to `to` (disks only grow), with `extra` columns written in
 * the same update. The update is conditional on that size, so a concurrent resize that
 * committed first makes this one fail as transient (its reservation would be wrong; the
 * transaction rolls back and the job retries). A disk that would shrink or a host without room
 * fails permanently.
 */
export async function resizeVm(
  tx: Kysely<Database>,
  table: 'sim_vms' | 'libvirt_vms',
  vm: PlacedVm,
  to: Need,
  extra: { readonly ips?: string } = {},
): Promise<void> {
  if (shrinksDisk(vm.disk_gb, to.diskGb)) {
    throw new DriverError(`The disk cannot shrink from ${vm.disk_gb} GB to ${to.diskGb} GB`, {
      transient: false,
    });
  }
  const delta = { cpu: to.cpu - vm.cpu, ramGb: to.ramGb - vm.ram_gb, diskGb: to.diskGb - vm.disk_gb };
  if (
    (delta.cpu !== 0 || delta.ramGb !== 0 || delta.diskGb !== 0) &&
    !(await reserve(tx, vm.host_id, delta))
  ) {
    throw new DriverError(
      `Host ${vm.host_id} has no room to grow to ${to.cpu} vCPU, ${to.ramGb} GB RAM, ${to.diskGb} GB disk`,
      { transient: false },
    );
  }
  // Both tables have these columns; `extra` only names columns of the table passed.
  const r = await tx
    .updateTable(table as 'sim_vms')
    .set({ cpu: to.cpu, ram_gb: to.ramGb, disk_gb: to.diskGb, ...extra })
    .where('id', '=', vm.id)
    .where('cpu', '=', vm.cpu)
    .where('ram_gb', '=', vm.ram_gb)
    .where('disk_gb', '=', vm.disk_gb)
    .executeTakeFirst();
  if (r.numUpdatedRows === 0n) {
    throw new DriverError(`VM ${vm.id} was resized by another job meanwhile`, { transient: true });
  }
}
