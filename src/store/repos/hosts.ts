import type { Insertable, Kysely, Transaction } from 'kysely';
import { ApiError } from '../../domain/errors.ts';
import { checkHostChange, checkNewHost, type HostChange, type NewHost } from '../../domain/host-input.ts';
import { uuidv7 } from '../../domain/ids.ts';
import { roundGb } from '../../domain/sizes.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import { isUniqueViolation } from '../errors.ts';
import type { Database, HostDriver, HostHealth, HostState, HypervisorHostTable } from '../schema.ts';
import { type AuditContext, recordAudit } from './audit.ts';

export type { HostDriver, HostHealth, HostState };

/** The counts of a host's current (or last) evacuation: the migrations it queued, by their jobs' outcome. */
export interface EvacuationView {
  readonly startedAt: number;
  /** Migrations that succeeded. */
  readonly done: number;
  /** Migrations that failed (or were cancelled). */
  readonly failed: number;
  /** Migrations queued or running. */
  readonly running: number;
  /** Servers still on the host with no migration under way. */
  readonly left: number;
}

type Amounts = {
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
  readonly backupGb: number;
};

/** A host as the operator sees it: its record, capacity, what is reserved on it, its VMs, its evacuation. */
export interface HostView {
  readonly id: string;
  readonly name: string;
  readonly driver: HostDriver;
  readonly uri: string | null;
  readonly state: HostState;
  readonly health: HostHealth;
  readonly failingSince: number | null;
  readonly checkedAt: number | null;
  readonly createdAt: number;
  readonly capacity: Amounts;
  readonly used: Amounts;
  /** VMs placed on it. */
  readonly services: number;
  /** Null if the host was never evacuated. */
  readonly evacuation: EvacuationView | null;
  /** The host's own rescue image; null: the global one (VRP_RESCUE_IMAGE). */
  readonly rescueImage: string | null;
}

/** The VM ids on each of `ids`, in either driver's table (a host is one driver's, so at most one has rows). */
async function vmsOn(db: Kysely<Database>, ids: readonly string[]): Promise<Map<string, string[]>> {
  const byHost = new Map<string, string[]>();
  if (ids.length === 0) return byHost;
  const [sim, libvirt] = await Promise.all([
    db.selectFrom('sim_vms').select(['id', 'host_id']).where('host_id', 'in', ids).execute(),
    db.selectFrom('libvirt_vms').select(['id', 'host_id']).where('host_id', 'in', ids).execute(),
  ]);
  for (const vm of [...sim, ...libvirt]) byHost.set(vm.host_id, [...(byHost.get(vm.host_id) ?? []), vm.id]);
  return byHost;
}

/**
 * The counts of each evacuating (or once evacuated) host's evacuation: its moves queued since it
 * started, by their jobs' status; `running` the host's moves under way (an earlier evacuation's
 * too, as the evacuator counts them); `left` is the VMs still on the host without a move under way.
 */
async function evacuations(
  db: Kysely<Database>,
  rows: readonly HypervisorHostTable[],
  vms: ReadonlyMap<string, readonly string[]>,
): Promise<Map<string, EvacuationView>> {
  const out = new Map<string, EvacuationView>();
  const evacuated = rows.filter((r) => r.evacuation_started_at !== null);
  if (evacuated.length === 0) return out;
  const moves = await db
    .selectFrom('host_evacuation_moves as m')
    .innerJoin('jobs as j', 'j.id', 'm.job_id')
    .select(['m.host_id', 'm.service_id', 'm.queued_at', 'j.status'])
    .where(
      'm.host_id',
      'in',
      evacuated.map((r) => r.id),
    )
    .execute();
  for (const r of evacuated) {
    const startedAt = r.evacuation_started_at ?? 0;
    const ofHost = moves.filter((m) => m.host_id === r.id);
    const mine = ofHost.filter((m) => Number(m.queued_at) >= startedAt);
    const moving = new Set(
      ofHost.filter((m) => m.status === 'queued' || m.status === 'running').map((m) => m.service_id),
    );
    out.set(r.id, {
      startedAt,
      done: mine.filter((m) => m.status === 'succeeded').length,
      failed: mine.filter((m) => m.status === 'failed' || m.status === 'skipped').length,
      running: moving.size,
      left: (vms.get(r.id) ?? []).filter((id) => !moving.has(id)).length,
    });
  }
  return out;
}

async function views(db: Kysely<Database>, rows: readonly HypervisorHostTable[]): Promise<HostView[]> {
  const vms = await vmsOn(
    db,
    rows.map((r) => r.id),
  );
  const evac = await evacuations(db, rows, vms);
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    driver: r.driver ?? 'simulated',
    uri: r.uri,
    state: r.state,
    health: r.health,
    failingSince: r.failing_since === null ? null : Number(r.failing_since),
    checkedAt: r.checked_at === null ? null : Number(r.checked_at),
    createdAt: Number(r.created_at),
    capacity: { cpu: r.cpu, ramGb: r.ram_gb, diskGb: r.disk_gb, backupGb: r.backup_gb },
    used: {
      cpu: r.used_cpu,
      ramGb: r.used_ram_gb,
      diskGb: r.used_disk_gb,
      // Rounded again on reading: rows summed before the sum was rounded may have drifted.
      backupGb: roundGb(r.used_backup_gb),
    },
    services: vms.get(r.id)?.length ?? 0,
    evacuation: evac.get(r.id) ?? null,
    rescueImage: r.rescue_image,
  }));
}

/** `driver`'s hosts by name, after `afterName`, at most `limit`. */
export async function listHostsPage(
  db: Kysely<Database>,
  driver: HostDriver,
  page: { readonly afterName?: string | undefined; readonly limit: number },
): Promise<HostView[]> {
  const rows = await db
    .selectFrom('hypervisor_hosts')
    .selectAll()
    .where('driver', '=', driver)
    .$if(page.afterName !== undefined, (q) => q.where('name', '>', page.afterName ?? ''))
    .orderBy('name')
    .limit(page.limit)
    .execute();
  return views(db, rows);
}

async function hostRow(
  db: Kysely<Database>,
  driver: HostDriver,
  id: string,
): Promise<HypervisorHostTable | undefined> {
  return db
    .selectFrom('hypervisor_hosts')
    .selectAll()
    .where('id', '=', id)
    .where('driver', '=', driver)
    .executeTakeFirst();
}

/** 404 `host_not_found`. */
export function hostNotFound(id: string, driver: HostDriver): ApiError {
  return new ApiError('host_not_found', `No ${driver} host has the id ${JSON.stringify(id.slice(0, 100))}`);
}

/** One of `driver`'s hosts; 404 `host_not_found` if the store has none with that id. */
export async function getHost(db: Kysely<Database>, driver: HostDriver, id: string): Promise<HostView> {
  const row = await hostRow(db, driver, id);
  if (!row) throw hostNotFound(id, driver);
  const [view] = await views(db, [row]);
  if (!view) throw hostNotFound(id, driver);
  return view;
}

/** One of `driver`'s hosts by its id or else its name (the CLI's HOST); 404 `host_not_found` if none. */
export async function findHostByIdOrName(
  db: Kysely<Database>,
  driver: HostDriver,
  idOrName: string,
): Promise<HostView> {
  const byId = await hostRow(db, driver, idOrName);
  const row =
    byId ??
    (await db
      .selectFrom('hypervisor_hosts')
      .selectAll()
      .where('name', '=', idOrName)
      .where('driver', '=', driver)
      .executeTakeFirst());
  if (!row) throw hostNotFound(idOrName, driver);
  return getHost(db, driver, row.id);
}

/** A host's state, or undefined if the store has no such host. */
export async function findHostState(db: Kysely<Database>, id: string): Promise<HostState | undefined> {
  const row = await db.selectFrom('hypervisor_hosts').select('state').where('id', '=', id).executeTakeFirst();
  return row?.state;
}

/**
 * The MAC address of a service's server's interface: the libvirt driver's (given once, unique
 * across the provider's VMs: src/drivers/libvirt/macs.ts); null where there is none (the
 * simulated hypervisor, a libvirt VM made before MACs were stored and not started since).
 */
export async function findVmMac(db: Kysely<Database>, vmId: string): Promise<string | null> {
  const row = await db.selectFrom('libvirt_vms').select('mac').where('id', '=', vmId).executeTakeFirst();
  return row?.mac ?? null;
}

const nameTaken = (name: string) =>
  new ApiError('host_name_taken', `A host named ${JSON.stringify(name)} exists already`);

/** Runs `write`; a unique violation (of the name: the only unique column a change sets) is 400 `host_name_taken`. */
async function uniqueName<T>(name: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (name !== undefined && isUniqueViolation(err)) throw nameTaken(name);
    throw err;
  }
}

/** How a host answered when it was added or its uri changed (jobs/host-probe.ts). */
export interface Reachability {
  readonly reachable: boolean;
}

/**
 * Adds one of `processDriver`'s hosts, active, after the checks of checkNewHost (400s with their
 * codes; a name in use is 400 `host_name_taken`). A host that did not answer (`reach`) is stored
 * `unreachable` from `now`, not refused: it may be set up after it is recorded. Audited
 * `host.create` (or what `audit` says) in the same transaction.
 */
export async function createHost(
  db: Kysely<Database>,
  processDriver: HostDriver,
  host: NewHost,
  reach: Reachability,
  now: number,
  audit: AuditContext,
): Promise<HostView> {
  checkNewHost(processDriver, host);
  const id = uuidv7(now, randomPoolBytes(16));
  await uniqueName(host.name, () =>
    db.transaction().execute(async (tx) => {
      if (
        await tx.selectFrom('hypervisor_hosts').select('id').where('name', '=', host.name).executeTakeFirst()
      )
        throw nameTaken(host.name);
      await tx
        .insertInto('hypervisor_hosts')
        .values(newHostRow(id, host.name, processDriver, host, now, reach))
        .execute();
      await recordAudit(tx, audit, { target: { type: 'host', id } }, now);
    }),
  );
  return getHost(db, processDriver, id);
}

/**
 * A new host's row: nothing placed on it, active. `probe`: what asking its connection when it
 * was added said (none for a seeded host, which is probed with the others): not reachable records
 * it unreachable from `now`. Both ways hosts are made use it: the
 * operator's (createHost) and the settings' seed (drivers/hosts.ts, seedHosts).
 */
export function newHostRow(
  id: string,
  name: string,
  driver: HostDriver,
  host: {
    readonly uri?: string | undefined;
    readonly cpu: number;
    readonly ramGb: number;
    readonly diskGb: number;
    readonly backupGb?: number | undefined;
  },
  now: number,
  probe?: Reachability,
): Insertable<HypervisorHostTable> {
  const reachable = probe?.reachable ?? true;
  return {
    id,
    name,
    driver,
    uri: host.uri ?? null,
    cpu: host.cpu,
    ram_gb: host.ramGb,
    disk_gb: host.diskGb,
    backup_gb: host.backupGb ?? 0,
    used_cpu: 0,
    used_ram_gb: 0,
    used_disk_gb: 0,
    used_backup_gb: 0,
    state: 'active',
    health: reachable ? 'up' : 'unreachable',
    failing_since: reachable ? null : now,
    checked_at: probe ? now : null,
    created_at: now,
  };
}

/** 400 `capacity_below_use`: which amount the change would put under what is placed on the host. */
function belowUse(row: HypervisorHostTable, change: HostChange): ApiError | undefined {
  const checks = [
    ['cpu', change.cpu, row.used_cpu, 'vCPU'],
    ['ram_gb', change.ramGb, row.used_ram_gb, 'GB'],
    ['disk_gb', change.diskGb, row.used_disk_gb, 'GB'],
    ['backup_gb', change.backupGb, roundGb(row.used_backup_gb), 'GB'],
  ] as const;
  for (const [field, value, used, unit] of checks) {
    if (value !== undefined && value < used)
      return new ApiError(
        'capacity_below_use',
        `${field} ${value} is below what is placed on host ${row.name}: ${used} ${unit} in use`,
      );
  }
  return undefined;
}

/**
 * Changes one of `driver`'s hosts (name, uri, capacity), after the checks of checkHostChange.
 * A capacity below what is placed on the host is 400 `capacity_below_use`; the update is
 * conditional on the use, so a placement that lands meanwhile cannot slip under the new
 * capacity (it either sees the new capacity or makes the change refused). A new uri takes the
 * health `reach` says. Audited (`host.update`) in the same transaction.
 */
export async function updateHost(
  db: Kysely<Database>,
  driver: HostDriver,
  id: string,
  change: HostChange,
  reach: Reachability | undefined,
  now: number,
  audit: AuditContext,
): Promise<HostView> {
  checkHostChange(driver, change);
  await uniqueName(change.name, () =>
    db.transaction().execute(async (tx) => {
      const row = await hostRow(tx, driver, id);
      if (!row) throw hostNotFound(id, driver);
      if (
        change.name !== undefined &&
        change.name !== row.name &&
        (await tx
          .selectFrom('hypervisor_hosts')
          .select('id')
          .where('name', '=', change.name)
          .executeTakeFirst())
      )
        throw nameTaken(change.name);
      const refused = belowUse(row, change);
      if (refused) throw refused;
      const health =
        change.uri === undefined || reach === undefined
          ? {}
          : reach.reachable
            ? { health: 'up' as const, failing_since: null, checked_at: now }
            : {
                health: 'unreachable' as const,
                failing_since: row.health === 'unreachable' ? row.failing_since : now,
                checked_at: now,
              };
      const values = {
        ...(change.name === undefined ? {} : { name: change.name }),
        ...(change.uri === undefined ? {} : { uri: change.uri }),
        ...(change.cpu === undefined ? {} : { cpu: change.cpu }),
        ...(change.ramGb === undefined ? {} : { ram_gb: change.ramGb }),
        ...(change.diskGb === undefined ? {} : { disk_gb: change.diskGb }),
        ...(change.backupGb === undefined ? {} : { backup_gb: change.backupGb }),
        ...(change.rescueImage === undefined ? {} : { rescue_image: change.rescueImage }),
        ...health,
      };
      // A change of nothing (an empty body) changes nothing: there is no empty UPDATE.
      if (Object.keys(values).length === 0) {
        await recordAudit(tx, audit, { target: { type: 'host', id } }, now);
        return;
      }
      const r = await tx
        .updateTable('hypervisor_hosts')
        .set(values)
        .where('id', '=', id)
        .$if(change.cpu !== undefined, (q) => q.where('used_cpu', '<=', change.cpu ?? 0))
        .$if(change.ramGb !== undefined, (q) => q.where('used_ram_gb', '<=', change.ramGb ?? 0))
        .$if(change.diskGb !== undefined, (q) => q.where('used_disk_gb', '<=', change.diskGb ?? 0))
        .$if(change.backupGb !== undefined, (q) => q.where('used_backup_gb', '<=', change.backupGb ?? 0))
        .executeTakeFirst();
      if (r.numUpdatedRows === 0n) {
        // A placement reserved room between the read and the update: tell which amount it took.
        const now2 = await hostRow(tx, driver, id);
        throw (now2 && belowUse(now2, change)) ?? hostNotFound(id, driver);
      }
      await recordAudit(tx, audit, { target: { type: 'host', id } }, now);
    }),
  );
  return getHost(db, driver, id);
}

/** What an operator does to a host's state. */
export type HostStateChange = 'drain' | 'activate' | 'evacuate';

/**
 * Drain (no new placements), activate (placements again; an evacuation stops) or evacuate
 * (draining, and the fleet's evacuation loop migrates its servers off from
 * `evacuation_started_at`; an evacuating host stays as it is) one of `driver`'s hosts, recorded
 * in the same transaction. 404 `host_not_found` if the store has no such host.
 */
export async function changeHostState(
  db: Kysely<Database>,
  driver: HostDriver,
  id: string,
  change: HostStateChange,
  now: number,
  audit: AuditContext,
): Promise<HostView> {
  await db.transaction().execute(async (tx) => {
    const q = tx.updateTable('hypervisor_hosts').where('id', '=', id).where('driver', '=', driver);
    const r =
      change === 'evacuate'
        ? await q
            .set((eb) => ({
              state: 'evacuating',
              evacuation_started_at: eb
                .case()
                .when('state', '=', 'evacuating')
                .then(eb.ref('evacuation_started_at'))
                .else(now)
                .end(),
            }))
            .executeTakeFirst()
        : await q.set({ state: change === 'drain' ? 'draining' : 'active' }).executeTakeFirst();
    if (r.numUpdatedRows === 0n) throw hostNotFound(id, driver);
    await recordAudit(tx, audit, { target: { type: 'host', id } }, now);
  });
  return getHost(db, driver, id);
}

/**
 * Removes one of `driver`'s hosts with the rows that are about it (its images, evacuation moves,
 * outage, the old copies of VMs it was to be cleared of), recorded in the same transaction. A host that still holds a VM (or a migration's
 * reservation) is 409 `host_not_empty`: move or terminate its servers first. The host's row is
 * locked first, so a placement racing the removal waits for it and then finds no host.
 */
export async function deleteHost(
  db: Kysely<Database>,
  driver: HostDriver,
  id: string,
  now: number,
  audit: AuditContext,
): Promise<void> {
  await db.transaction().execute(async (tx: Transaction<Database>) => {
    const locked = await tx
      .updateTable('hypervisor_hosts')
      .set((eb) => ({ state: eb.ref('state') }))
      .where('id', '=', id)
      .where('driver', '=', driver)
      .executeTakeFirst();
    if (locked.numUpdatedRows === 0n) throw hostNotFound(id, driver);
    const [sim, libvirt] = await Promise.all(
      (['sim_vms', 'libvirt_vms'] as const).map((table) =>
        tx
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number | string>().as('n'))
          .where((eb) => eb.or([eb('host_id', '=', id), eb('migrating_to', '=', id)]))
          .executeTakeFirstOrThrow(),
      ),
    );
    const vms = Number(sim?.n ?? 0) + Number(libvirt?.n ?? 0);
    if (vms > 0)
      throw new ApiError(
        'host_not_empty',
        `${vms === 1 ? '1 server is' : `${vms} servers are`} on this host: migrate or terminate ${vms === 1 ? 'it' : 'them'} first`,
      );
    await tx.deleteFrom('host_images').where('host_id', '=', id).execute();
    // Old copies of VMs it still holds (libvirt_leftovers) are no longer the product's to remove.
    await tx.deleteFrom('libvirt_leftovers').where('host_id', '=', id).execute();
    await tx.deleteFrom('host_evacuation_moves').where('host_id', '=', id).execute();
    await tx.deleteFrom('sim_host_outages').where('host_id', '=', id).execute();
    await tx.deleteFrom('sim_storage_full').where('host_id', '=', id).execute();
    await tx.deleteFrom('ip_pool_hosts').where('host_id', '=', id).execute();
    await tx.deleteFrom('hypervisor_hosts').where('id', '=', id).execute();
    await recordAudit(tx, audit, { target: { type: 'host', id } }, now);
  });
}

/**
 * The checks of a migration to `to` of a VM on `from`, among `driver`'s hosts: 404
 * `host_not_found`, 400 `same_host`, `host_not_active` (draining or evacuating) or
 * `host_unreachable`. The driver checks room when it reserves it.
 */
export async function checkMigrationDestination(
  db: Kysely<Database>,
  driver: HostDriver,
  from: string | null,
  to: string,
): Promise<void> {
  const host = await hostRow(db, driver, to);
  if (!host) throw hostNotFound(to, driver);
  if (host.id === from) throw new ApiError('same_host', `The server is on host ${host.name} already`);
  if (host.state !== 'active')
    throw new ApiError('host_not_active', `Host ${host.name} is ${host.state}: it takes no new server`);
  if (host.health !== 'up')
    throw new ApiError('host_unreachable', `Host ${host.name} does not answer: it takes no server now`);
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
