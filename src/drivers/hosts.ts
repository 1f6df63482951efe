import { setTimeout as sleep } from 'node:timers/promises';
import { type CompiledQuery, type Insertable, type Kysely, sql } from 'kysely';
import { byCodeUnits } from '../domain/code-unit-text.ts';
import { shrinksDisk } from '../domain/orders.ts';
import { GB_PARTS } from '../domain/sizes.ts';
import { dialectOf } from '../store/dialect-of.ts';
import { type GatedPart, gatedInsert, writeGated } from '../store/gated-write.ts';
import { once } from '../store/once.ts';
import { perTurn } from '../store/per-turn.ts';
import { prepare, slot } from '../store/prepared.ts';
import { newHostRow } from '../store/repos/hosts.ts';
import type {
  Database,
  HostDriver,
  HypervisorHostTable,
  LibvirtVmTable,
  SimVmTable,
} from '../store/schema.ts';
import { readTogether } from '../store/statement-batch.ts';
import { DriverError } from './driver.ts';

export interface Need {
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
}

/** A host as the settings list it: its capacity (backup storage only where the driver keeps backups on it). */
export interface HostCapacity {
  readonly id: string;
  /** The libvirt connection; absent for simulated hosts. */
  readonly uri?: string;
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
  readonly backupGb?: number;
}

/** Set once the settings' hosts have been written to the store: later starts leave hosts alone. */
const SEEDED_KEY = 'hosts_seeded';

/**
 * The hosts the settings list (VRP_SIM_HOSTS, VRP_LIBVIRT_HOSTS) seed a fresh store, once: from
 * then on hosts are records the operator manages (OPS/hosts), and the settings are not read
 * again. A store upgraded from before hosts were records (migration 018) gets the listed hosts
 * it lacks, and its hosts that no driver has adopted yet become `driver`'s, with the listed URI.
 */
export async function seedHosts(
  db: Kysely<Database>,
  driver: HostDriver,
  hosts: readonly HostCapacity[],
  now: number,
): Promise<void> {
  await once(db, SEEDED_KEY, now, async (tx) => {
    for (const host of hosts) {
      await tx
        .insertInto('hypervisor_hosts')
        .values(newHostRow(host.id, host.id, driver, host, now))
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      if (host.uri !== undefined)
        await tx
          .updateTable('hypervisor_hosts')
          .set({ uri: host.uri })
          .where('id', '=', host.id)
          .where('uri', 'is', null)
          .execute();
    }
    await tx.updateTable('hypervisor_hosts').set({ driver }).where('driver', 'is', null).execute();
  });
}

/** What a VM took from the host it is placed on, written with its row: its addresses (JSON text of a list). */
export interface VmAddresses {
  readonly ips?: string;
}

/** A driver's row of a VM, without the host it is placed on (placeVm writes it). */
export type VmRecord =
  | { readonly table: 'sim_vms'; readonly row: Omit<Insertable<SimVmTable>, 'host_id'> & { id: string } }
  | {
      readonly table: 'libvirt_vms';
      readonly row: Omit<Insertable<LibvirtVmTable>, 'host_id'> & { id: string };
    };

/** The driver's active, answering hosts, but `exclude` (no host's id is empty: '' excludes none). */
const placeableHosts = prepare({ driver: slot<HostDriver>(), exclude: slot<string>() }, (db, s) =>
  db
    .selectFrom('hypervisor_hosts')
    .selectAll()
    .where('driver', '=', s.driver)
    .where('state', '=', 'active')
    .where('health', '=', 'up')
    .where('id', '!=', s.exclude),
);

/**
 * The hosts a new VM (or a migrating one) may go to: the driver's, active (a host the operator
 * drains or evacuates takes no new VM, on every driver, since both place through here) and
 * answering, those with room for `need` first by most free RAM.
 */
async function candidateHosts(
  db: Kysely<Database>,
  need: Need,
  driver: HostDriver,
  exclude?: string,
): Promise<HypervisorHostTable[]> {
  // With the other placements' reads of this turn, on PostgreSQL (statement-batch.ts).
  const query = placeableHosts.compile(db, { driver, exclude: exclude ?? '' });
  const hosts = await readTogether(db, query, `${driver} ${exclude ?? ''}`);
  return hosts
    .filter(
      (h) =>
        h.used_cpu + need.cpu <= h.cpu &&
        h.used_ram_gb + need.ramGb <= h.ram_gb &&
        h.used_disk_gb + need.diskGb <= h.disk_gb,
    )
    .sort((a, b) => b.ram_gb - b.used_ram_gb - (a.ram_gb - a.used_ram_gb) || byCodeUnits(a.name, b.name));
}

const noRoom = (need: Need) =>
  new DriverError(`No host has room for ${need.cpu} vCPU, ${need.ramGb} GB RAM, ${need.diskGb} GB disk`, {
    transient: false,
  });

/**
 * Reserves room on the host with the most free RAM that fits among `driver`'s placeable hosts
 * (candidateHosts). The reservation is a conditional update, on the room, the state and the
 * health, so concurrent placements (workers, processes) never overbook a host nor place on one
 * drained or found unreachable meanwhile.
 *
 * The driver's row of the VM (`vm`) is written with the reservation that succeeds, as a part of
 * it (store/gated-write.ts): on PostgreSQL one statement, the transaction's last, so the host's
 * row, whose lock every placement on the host waits for, is locked from there to the commit only
 * (bench/FINDINGS.md). `onHost` runs just before, for what the VM takes from the host tried (its
 * addresses, from the host's pools); the VM's addresses it returns are written with the row.
 */
export async function placeVm(
  db: Kysely<Database>,
  need: Need,
  driver: HostDriver,
  vm: VmRecord,
  onHost?: (hostId: string) => Promise<VmAddresses>,
): Promise<string> {
  return firstToTake(db, await candidateHosts(db, need, driver), need, async (hostId) => {
    const taken = (await onHost?.(hostId)) ?? {};
    const row = { ...vm.row, ...taken, host_id: hostId } as Insertable<Database[typeof vm.table]>;
    // The reservation, and the VM's row only if it was made (one statement on PostgreSQL).
    return reserveWith(db, hostId, need, gatedInsert(vm.table, row));
  });
}

/**
 * The first of `hosts` on which `reserve` succeeds. On PostgreSQL, in a transaction, a host after
 * the first is tried only if its row can be locked without waiting in the database
 * (lockedWithoutWaiting): a reservation that found no room may still hold its host's row (one that
 * waited for another transaction's update of the row locks it before checking the row's new
 * version, and keeps it to the commit), and waiting for a second host's row while holding the
 * first could close a cycle with a transaction that holds the second and waits for the first.
 * Hosts passed over so, and none taken: a transient failure (the job tries again), not "no room".
 */
async function firstToTake(
  db: Kysely<Database>,
  hosts: readonly HypervisorHostTable[],
  need: Need,
  reserve: (hostId: string) => Promise<boolean>,
): Promise<string> {
  let busy = 0;
  for (const [tried, h] of hosts.entries()) {
    if (tried > 0 && !(await lockedWithoutWaiting(db, h.id))) {
      busy++;
      continue;
    }
    if (await reserve(h.id)) return h.id;
  }
  if (busy > 0)
    throw new DriverError(
      `No host could take the server now: ${busy === 1 ? 'a host with room was' : `${busy} hosts with room were`} busy with other placements`,
      { transient: true },
    );
  throw noRoom(need);
}

/** Pauses between the tries of lockedWithoutWaiting (ms): a placement's commit holds a host's row a few ms. */
const BUSY_HOST_RETRIES_MS = [5, 20, 50];

/**
 * Locks the host's row if no other transaction holds it (PostgreSQL, in a transaction), trying
 * again after each of BUSY_HOST_RETRIES_MS without waiting in the database: a placement that is
 * committing lets go of it in a few ms, one that waits for a row this transaction holds does not,
 * and this one then gives up and lets go of its own. Elsewhere there is nothing to wait for.
 */
async function lockedWithoutWaiting(db: Kysely<Database>, hostId: string): Promise<boolean> {
  if (!db.isTransaction || dialectOf(db) !== 'postgres') return true;
  for (const pauseMs of [0, ...BUSY_HOST_RETRIES_MS]) {
    if (pauseMs > 0) await sleep(pauseMs);
    const row = await db
      .selectFrom('hypervisor_hosts')
      .select('id')
      .where('id', '=', hostId)
      .forUpdate()
      .skipLocked()
      .executeTakeFirst();
    if (row) return true;
  }
  return false;
}

/** A placement waiting for its turn's end (reserveWith). */
interface Waiting {
  readonly hostId: string;
  readonly need: Need;
  readonly part: GatedPart;
  resolve(reserved: boolean): void;
  reject(err: unknown): void;
}

/**
 * Reserves `need` on the host, and writes `part` (the VM's row) only if it did. On PostgreSQL
 * the placements made on `db` in one turn (a transaction group's, transaction-group.ts) on one
 * host, which all chose it from the same read, are one reservation of their sum with all their
 * rows: one statement and one lock of the host's row where each took its own. If the sum does
 * not fit, each is made alone, in turn, as before: those that fit are placed, the others go on
 * to the next host. Elsewhere made at once.
 */
function reserveWith(db: Kysely<Database>, hostId: string, need: Need, part: GatedPart): Promise<boolean> {
  if (dialectOf(db) !== 'postgres' || !(need.cpu > 0 && need.ramGb > 0 && need.diskGb > 0))
    return writeGated(db, reservation(db, hostId, need, { placeable: true }), [part]);
  return new Promise((resolve, reject) => placeInTurn(db, { hostId, need, part, resolve, reject }));
}

const placeInTurn = perTurn((db: Kysely<Database>, all: Waiting[]) => {
  const byHost = new Map<string, Waiting[]>();
  for (const w of all) {
    const list = byHost.get(w.hostId);
    if (list) list.push(w);
    else byHost.set(w.hostId, [w]);
  }
  for (const [hostId, waiting] of byHost) void placeAll(db, hostId, waiting);
});

/** reserveWith's placements on one host: their sum at once, else each alone. */
async function placeAll(db: Kysely<Database>, hostId: string, waiting: readonly Waiting[]): Promise<void> {
  if (waiting.length > 1) {
    const sum = { cpu: 0, ramGb: 0, diskGb: 0 };
    for (const { need } of waiting) {
      sum.cpu += need.cpu;
      sum.ramGb += need.ramGb;
      sum.diskGb += need.diskGb;
    }
    try {
      const reserved = reservation(db, hostId, sum, { placeable: true });
      if (
        await writeGated(
          db,
          reserved,
          waiting.map((w) => w.part),
        )
      ) {
        for (const w of waiting) w.resolve(true);
        return;
      }
    } catch (err) {
      // In a transaction, which the failure aborted: each caller is told, and the transaction's
      // owner decides (a group makes each body again alone). Outside one: each alone, below.
      if (db.isTransaction) {
        for (const w of waiting) w.reject(err);
        return;
      }
    }
  }
  for (const w of waiting) {
    await writeGated(db, reservation(db, hostId, w.need, { placeable: true }), [w.part]).then(
      w.resolve,
      w.reject,
    );
  }
}

/**
 * Reserves room for a migrating VM: on `to` if given (it must be the driver's, active and
 * answering), else on the placeable host with the most free RAM other than `from`. Returns the
 * host reserved on. A destination that cannot take it fails permanently, with the reason.
 */
export async function reserveDestination(
  db: Kysely<Database>,
  need: Need,
  driver: HostDriver,
  from: string,
  to: string | null,
): Promise<string> {
  if (to !== null) {
    if (to === from) throw new DriverError('The server is already on that host', { transient: false });
    if (await reserve(db, to, need, { placeable: true, driver })) return to;
    const host = await db.selectFrom('hypervisor_hosts').selectAll().where('id', '=', to).executeTakeFirst();
    const why =
      !host || host.driver !== driver
        ? 'is not a host of this driver'
        : host.state !== 'active'
          ? `is ${host.state}`
          : host.health !== 'up'
            ? 'does not answer'
            : 'has no room for the server';
    throw new DriverError(`Host ${host?.name ?? to} ${why}`, { transient: false });
  }
  return firstToTake(db, await candidateHosts(db, need, driver, from), need, (hostId) =>
    reserve(db, hostId, need, { placeable: true }),
  );
}

/** A reservation's conditions besides room: a new placement's (state and health), the host's driver. */
interface ReserveOptions {
  readonly placeable?: boolean;
  readonly driver?: HostDriver;
}

/**
 * Adds `delta` to a host's reservation; false if an amount that grows does not fit (or, with
 * `placeable`, a new placement, if the host is not active or does not answer). Amounts that shrink never stop it, so
 * room given back is given back even on a host configured below its use.
 */
async function reserve(
  db: Kysely<Database>,
  hostId: string,
  delta: Need,
  options: ReserveOptions = {},
): Promise<boolean> {
  const r = await db.executeQuery(reservation(db, hostId, delta, options));
  return (r.numAffectedRows ?? 0n) > 0n;
}

/** reserve()'s update, to run as it is or as the guard of what belongs to it (placeVm). */
function reservation(
  db: Kysely<Database>,
  hostId: string,
  delta: Need,
  options: ReserveOptions = {},
): CompiledQuery {
  // A new VM's placement, the common case, with every amount growing: written once (below).
  if (options.placeable && !options.driver && delta.cpu > 0 && delta.ramGb > 0 && delta.diskGb > 0)
    return reservePlacement.compile(db, { hostId, ...delta });
  return db
    .updateTable('hypervisor_hosts')
    .set((eb) => ({
      used_cpu: eb('used_cpu', '+', delta.cpu),
      used_ram_gb: eb('used_ram_gb', '+', delta.ramGb),
      used_disk_gb: eb('used_disk_gb', '+', delta.diskGb),
    }))
    .where('id', '=', hostId)
    .where((eb) =>
      eb.and([
        ...(options.placeable ? [eb('state', '=', 'active'), eb('health', '=', 'up')] : []),
        ...(options.driver ? [eb('driver', '=', options.driver)] : []),
        ...(delta.cpu > 0 ? [eb(eb('used_cpu', '+', delta.cpu), '<=', eb.ref('cpu'))] : []),
        ...(delta.ramGb > 0 ? [eb(eb('used_ram_gb', '+', delta.ramGb), '<=', eb.ref('ram_gb'))] : []),
        ...(delta.diskGb > 0 ? [eb(eb('used_disk_gb', '+', delta.diskGb), '<=', eb.ref('disk_gb'))] : []),
      ]),
    )
    .compile();
}

/** reserve() of a placement whose amounts all grow, compiled once (store/prepared.ts). */
const reservePlacement = prepare(
  { hostId: slot<string>(), cpu: slot<number>(), ramGb: slot<number>(), diskGb: slot<number>() },
  (db, s) =>
    db
      .updateTable('hypervisor_hosts')
      .set((eb) => ({
        used_cpu: eb('used_cpu', '+', s.cpu),
        used_ram_gb: eb('used_ram_gb', '+', s.ramGb),
        used_disk_gb: eb('used_disk_gb', '+', s.diskGb),
      }))
      .where('id', '=', s.hostId)
      .where('state', '=', 'active')
      .where('health', '=', 'up')
      .where((eb) => eb(eb('used_cpu', '+', s.cpu), '<=', eb.ref('cpu')))
      .where((eb) => eb(eb('used_ram_gb', '+', s.ramGb), '<=', eb.ref('ram_gb')))
      .where((eb) => eb(eb('used_disk_gb', '+', s.diskGb), '<=', eb.ref('disk_gb'))),
);

/**
 * A migration's reservation found made on `held` (by an earlier attempt, or left by an earlier
 * job), given back and taken again by reserveDestination's rule: on `to` if given, else on `held`
 * again. A destination drained, put to evacuate or found unreachable since, or another than the
 * one asked for, does not keep it. Run it in the caller's transaction: a refusal (thrown) rolls
 * the give-back back too.
 */
export async function retakeDestination(
  tx: Kysely<Database>,
  need: Need,
  driver: HostDriver,
  from: string,
  held: string,
  to: string | null,
): Promise<string> {
  await free(tx, held, need);
  return reserveDestination(tx, need, driver, from, to ?? held);
}

/** Gives a VM's room back to its host, unconditionally. */
export async function free(db: Kysely<Database>, hostId: string, need: Need): Promise<void> {
  await reserve(db, hostId, { cpu: -need.cpu, ramGb: -need.ramGb, diskGb: -need.diskGb });
}

/**
 * Takes backup storage on a host; false if it is full. A negative size frees it, unconditionally.
 * Only legacy backups (taken on the host before the backup store) hold any: nothing takes new
 * room since, what is freed is theirs.
 */
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

/** Gives a legacy backup's storage back to its host, unconditionally. */
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
