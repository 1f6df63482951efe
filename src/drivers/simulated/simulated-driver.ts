import { createHash } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { FaultConfig } from '../../config.ts';
import { prepare, slot } from '../../store/prepared.ts';
import type { Database, SimVmTable } from '../../store/schema.ts';
import { readTogether, updateTogether } from '../../store/statement-batch.ts';
import { inGroupTransaction } from '../../store/transaction-group.ts';
import {
  DISK_RESTORED,
  type DiskExport,
  DriverError,
  type HypervisorDriver,
  migrationUndone,
  type VmInfo,
  type VmSpec,
} from '../driver.ts';
import {
  free,
  freeBackupSpace,
  type Need,
  placeVm,
  reserveDestination,
  resizeVm,
  retakeDestination,
} from '../hosts.ts';
import type { IpPool } from '../ip-pool.ts';
import { diskErrorAfterChange, diskErrorOnRun, markAfterChange, storageFull } from './boot-settle.ts';
import { diskRuns, exportBytes, readDisk } from './disk.ts';
import { createFaults } from './faults.ts';
import { reinstallVm } from './reinstall.ts';
import { simulatedRescue } from './rescue.ts';
import { createSerialConsole } from './serial-console.ts';
import { createSleeper, stepMs } from './timings.ts';
import { countersAt, NO_TRAFFIC, type TrafficRate } from './traffic.ts';

export interface SimulatedDriverOptions {
  readonly db: Kysely<Database>;
  readonly ipPool: IpPool;
  readonly faults: FaultConfig;
  /** Multiplier of the step timings (timings.ts); 0 = instant. */
  readonly speed: number;
  /** Bytes per second each running VM receives and sends (VRP_SIM_TRAFFIC_RATE); none by default. */
  readonly trafficRate?: TrafficRate;
  readonly random?: () => number;
  readonly now?: () => number;
  /**
   * Called when a migration has copied everything and is about to switch the VM over (tests: a
   * destination that stops answering at that moment, deterministically).
   */
  readonly beforeMigrationEnds?: (vmId: string, toHostId: string) => Promise<void>;
}

/** A VM's row, and whether its host has an outage (outside.hostDown): read together, in one query. */
type FoundVm = SimVmTable & { readonly down_since: number | null };

/** What a host that has an outage answers: nothing; the caller may try again later. */
export function hostDown(hostId: string): DriverError {
  return new DriverError(`Host ${hostId} does not answer`, { transient: true });
}

/** Disk a fresh VM uses: the template's base image, 1.5 to 3 GB depending on the template. */
function baseDiskGb(templateId: string): number {
  const h = createHash('sha256').update(templateId).digest();
  return 1.5 + (h.readUInt8(0) / 255) * 1.5;
}

/** Each write-like operation (boot logs, packages, password files) grows the used disk a little. */
const WRITE_GB = 0.05;

const round1 = (n: number) => Math.ceil(n * 10) / 10;

const GIB = 1024 * 1024 * 1024;

/** The VM's row with its host's outage, if any (an indexed join on a key). */
const vmWithOutage = prepare({ vmId: slot<string>() }, (db, s) =>
  db
    .selectFrom('sim_vms')
    .leftJoin('sim_host_outages as o', 'o.host_id', 'sim_vms.host_id')
    .selectAll('sim_vms')
    .select('o.since as down_since')
    .where('sim_vms.id', '=', s.vmId),
);

/** The VM running, with its addresses, unless its host has an outage (then no row changes). */
const bootUnlessHostDown = prepare(
  { id: slot<string>(), ips: slot<string>(), boot_count: slot<number>(), updated_at: slot<number>() },
  (db, s) =>
    db
      .updateTable('sim_vms')
      .set({
        ips: s.ips,
        power: 'running',
        boot_count: s.boot_count,
        updated_at: s.updated_at,
        start_with_host: 1,
        // A new server's first boot: its disk was just made (where a real host's storage is
        // full, that copy fails first).
        disk_error: null,
      })
      .where('id', '=', s.id)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('sim_host_outages as o')
              .select('o.host_id')
              .whereRef('o.host_id', '=', 'sim_vms.host_id'),
          ),
        ),
      ),
);

/**
 * The simulated hypervisor: hosts with capacity, an IPv4 pool, VMs with power state, disks
 * whose content moves with writes (disk.ts: real bytes, exported and imported), checkpoints, and
 * the legacy backups that take host storage and bring content back.
 * All of it is kept in the store, so a restart of the process loses nothing.
 */
export function createSimulatedDriver(o: SimulatedDriverOptions): HypervisorDriver {
  const { db, ipPool } = o;
  const now = o.now ?? Date.now;
  const sleeper = createSleeper(o.speed);
  const faults = createFaults(o.faults, o.random);

  // The outage of the VM's host comes with the VM's row (an indexed join on a key), so checking
  // it costs every operation no query of its own.
  // With the other reads of it in this turn, on PostgreSQL (statement-batch.ts).
  const find = async (vmId: string, from: Kysely<Database> = db): Promise<FoundVm | undefined> =>
    (await readTogether(from, vmWithOutage.compile(from, { vmId }), vmId))[0];
  async function get(vmId: string, from: Kysely<Database> = db): Promise<FoundVm> {
    const vm = await find(vmId, from);
    if (!vm) throw new DriverError(`VM ${vmId} does not exist`, { transient: false });
    return vm;
  }
  const info = (vm: SimVmTable): VmInfo => ({
    vmId: vm.id,
    hostId: vm.host_id,
    power: vm.power === 'running' ? 'running' : 'stopped',
    cpu: vm.cpu,
    ramGb: vm.ram_gb,
    diskGb: vm.disk_gb,
    ips: JSON.parse(vm.ips) as string[],
    diskRevision: vm.content_generation,
    bandwidthMbit: vm.bandwidth_mbit,
  });
  /** A write to the store; none once the driver is closed. */
  function transaction<T>(operation: string, body: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
    sleeper.ensureOpen(operation);
    return db.transaction().execute(body);
  }
  /**
   * Writes `patch` and nothing else of `vm`, so columns another step changed meanwhile stay.
   * `write`: a write to the disk, content moves on, used space grows. A patch with the power
   * settles with it the VM's pause: none once stopped; once running (booted, resumed), one for
   * want of room on a host whose storage is full (boot-settle.ts); and its start with its host:
   * marked once it runs its own system, unmarked once stopped or in rescue (as on libvirt, where
   * the rescue system runs as a live definition only).
   */
  async function update(
    vm: SimVmTable,
    patch: Partial<SimVmTable>,
    write: boolean,
    /**
     * Without a power in `patch`: `resumed`, the VM paused on a failed write is resumed (its
     * mark untouched, as libvirt's resume); `restarted`, it was off for the change and is back
     * in its power state (a resize, a restore: libvirt's stop then start, which mark it if it
     * runs and unmark it if not).
     */
    settle?: 'resumed' | 'restarted',
  ): Promise<VmInfo> {
    const changes: Partial<SimVmTable> = {
      ...patch,
      updated_at: now(),
      ...(write
        ? {
            content_generation: (patch.content_generation ?? vm.content_generation) + 1,
            used_disk_gb: Math.min(
              patch.disk_gb ?? vm.disk_gb,
              (patch.used_disk_gb ?? vm.used_disk_gb) + WRITE_GB,
            ),
          }
        : {}),
    };
    sleeper.ensureOpen('update');
    const running = patch.power === 'running';
    const rescued =
      ('rescue_password_hash' in patch ? patch.rescue_password_hash : vm.rescue_password_hash) != null;
    const pause =
      patch.power === undefined
        ? settle === 'resumed'
          ? { disk_error: diskErrorOnRun }
          : settle === 'restarted'
            ? { disk_error: diskErrorAfterChange, start_with_host: markAfterChange }
            : {}
        : {
            disk_error: running ? diskErrorOnRun : null,
            start_with_host: running && !rescued ? 1 : 0,
          };
    await db
      .updateTable('sim_vms')
      .set({ ...changes, ...pause })
      .where('id', '=', vm.id)
      .execute();
    return info({ ...vm, ...changes });
  }
  const needOf = (vm: SimVmTable): Need => ({ cpu: vm.cpu, ramGb: vm.ram_gb, diskGb: vm.disk_gb });
  /** Gives back everything the VM holds: the VM, its host capacity, its backups' storage, its addresses. */
  async function remove(vmId: string): Promise<void> {
    await transaction('destroy', async (tx) => {
      const vm = await tx.deleteFrom('sim_vms').where('id', '=', vmId).returningAll().executeTakeFirst();
      if (vm) await free(tx, vm.host_id, needOf(vm));
      // Half-way through a migration (or one its job ended without): the destination's room too.
      if (vm?.migrating_to) await free(tx, vm.migrating_to, needOf(vm));
      await tx.deleteFrom('sim_checkpoints').where('vm_id', '=', vmId).execute();
      const backups = await tx.deleteFrom('sim_backups').where('vm_id', '=', vmId).returningAll().execute();
      for (const b of backups) await freeBackupSpace(tx, b.host_id, b.size_gb);
      await ipPool.release(vmId, tx);
    });
  }
  /** The VM, if its host answers. */
  async function entry(vmId: string, operation: string): Promise<FoundVm> {
    const vm = await get(vmId);
    if (vm.down_since !== null) throw hostDown(vm.host_id);
    faults.check(operation, vm.host_id);
    return vm;
  }
  /** Throws if any of `hostIds` has an outage: one indexed read. */
  async function answering(hostIds: readonly string[], from: Kysely<Database> = db): Promise<void> {
    const down = await from
      .selectFrom('sim_host_outages')
      .select('host_id')
      .where('host_id', 'in', hostIds)
      .executeTakeFirst();
    if (down) throw hostDown(down.host_id);
  }
  const passwordHash = (password: string) => createHash('sha256').update(password).digest('hex');

  async function createVm(spec: VmSpec): Promise<VmInfo> {
    const found = await find(spec.vmId);
    if (found && found.down_since !== null) throw hostDown(found.host_id);
    let vm: SimVmTable | undefined = found;
    faults.check('create', vm?.host_id ?? 'scheduler');
    let ips: string[];
    if (!vm) {
      const need = { cpu: spec.cpu, ramGb: spec.ramGb, diskGb: spec.diskGb };
      // Room on a host, the VM and its addresses are taken together or not at all; the host's
      // row is written last (placeVm).
      // With the creates of this turn, on PostgreSQL (transaction-group.ts): the body is only the
      // transaction's work, and may run twice.
      sleeper.ensureOpen('create');
      vm = await inGroupTransaction(db, async (tx) => {
        let addresses: string[] = [];
        const t = now();
        const row = {
          id: spec.vmId,
          power: 'stopped' as const,
          cpu: spec.cpu,
          ram_gb: spec.ramGb,
          disk_gb: spec.diskGb,
          used_disk_gb: round1(baseDiskGb(spec.templateId)),
          ips: '[]',
          hostname: spec.hostname,
          password_hash: passwordHash(spec.password),
          content_generation: 1,
          boot_count: 0,
          guest_agent: 1,
          created_at: t,
          updated_at: t,
          migrating_to: null,
          rescue_password_hash: null,
          traffic_in: 0,
          traffic_out: 0,
          traffic_at: t,
          traffic_session: '',
          bandwidth_mbit: null,
          disk_error: null,
          start_with_host: 0,
        };
        // The addresses come from the pools of the host tried (another host tried next: given
        // back, then taken from that host's pools).
        const hostId = await placeVm(tx, need, 'simulated', { table: 'sim_vms', row }, async (hostId) => {
          if (addresses.length > 0) await ipPool.release(spec.vmId, tx);
          addresses = (await ipPool.allocateAll(spec.vmId, hostId, spec.ipCount, tx)).ipv4;
          return { ips: JSON.stringify(addresses) };
        });
        return { ...row, ips: JSON.stringify(addresses), host_id: hostId } satisfies SimVmTable;
      });
      ips = JSON.parse(vm.ips) as string[];
      await sleeper.sleep('cloneDisk');
    } else {
      // A retry finds the VM: top its addresses up (idempotent) in case an earlier attempt stopped short.
      ips = (await ipPool.allocateAll(spec.vmId, vm.host_id, spec.ipCount)).ipv4;
    }
    if (vm.power === 'running' && vm.ips === JSON.stringify(ips)) return info(vm);
    await sleeper.sleep('boot');
    // The boot is the first thing the host is asked to do: on a host that has an outage it does
    // not happen (the write is conditional on none, so the check costs no query of its own).
    const booted = {
      ips: JSON.stringify(ips),
      power: 'running',
      boot_count: vm.boot_count + 1,
      updated_at: now(),
    } as const;
    sleeper.ensureOpen('boot');
    // With the other boots of this turn, on PostgreSQL (statement-batch.ts).
    const boot = bootUnlessHostDown.compile(db, { ...booted, id: vm.id });
    if ((await updateTogether(db, boot, `sim_vms#${vm.id}`)) === 0) throw hostDown(vm.host_id);
    return info({ ...vm, ...booted });
  }

  /** Gives the destination's reservation back, if the VM still holds it: the VM stays whole on its source. */
  async function undoMigration(vmId: string, to: string, need: Need): Promise<void> {
    await transaction('undo migration', async (tx) => {
      const r = await tx
        .updateTable('sim_vms')
        .set({ migrating_to: null })
        .where('id', '=', vmId)
        .where('migrating_to', '=', to)
        .executeTakeFirst();
      if (r.numUpdatedRows > 0n) await free(tx, to, need);
    });
  }

  /**
   * Reserves the destination and records it on the VM, together: a re-run after a crash finds it.
   * A reservation found made (by an earlier attempt, or left by an earlier job) is given back and
   * taken again by the same rule as a first one (reserveDestination), on the host asked for or,
   * with none asked for, on the host it was made on: a destination drained, put to evacuate or
   * found unreachable since, or another than the one asked for, does not keep it. One that no
   * longer passes is undone, and the migration fails with the reason.
   */
  async function reserveMove(vm: SimVmTable, toHostId: string | null): Promise<string> {
    const need = needOf(vm);
    try {
      return await transaction('migrate', async (tx) => {
        const current = await get(vm.id, tx);
        const held = current.migrating_to;
        const reserved =
          held === null
            ? await reserveDestination(tx, need, 'simulated', current.host_id, toHostId)
            : await retakeDestination(tx, need, 'simulated', current.host_id, held, toHostId);
        await tx.updateTable('sim_vms').set({ migrating_to: reserved }).where('id', '=', vm.id).execute();
        return reserved;
      });
    } catch (err) {
      if (vm.migrating_to === null || !(err instanceof DriverError)) throw err;
      await undoMigration(vm.id, vm.migrating_to, need);
      throw migrationUndone(err);
    }
  }

  async function migrateVm(vmId: string, toHostId: string | null): Promise<VmInfo> {
    const vm = await entry(vmId, 'migrate');
    const need = needOf(vm);
    const to = await reserveMove(vm, toHostId);
    try {
      await answering([to]);
      if (vm.power === 'running') {
        // Live: memory copied while the guest runs, then a short pause while it switches over.
        await sleeper.sleep('migrateLiveBase', stepMs('migratePerGbRam') * vm.ram_gb);
        await sleeper.sleep('migratePause');
      } else {
        await sleeper.sleep('coldMigrateBase', stepMs('coldMigratePerGb') * vm.used_disk_gb);
      }
      await o.beforeMigrationEnds?.(vmId, to);
      // The switch-over: the VM on the destination, the source's room given back, in one
      // transaction, only if both hosts still answer.
      return await transaction('migrate', async (tx) => {
        await answering([vm.host_id, to], tx);
        const t = now();
        const moved = await tx
          .updateTable('sim_vms')
          // Its copy there is marked if it runs (libvirt marks a live move's destination; a cold
          // one arrives defined, unmarked).
          .set({
            host_id: to,
            migrating_to: null,
            updated_at: t,
            start_with_host: vm.power === 'running' ? 1 : 0,
          })
          .where('id', '=', vmId)
          .where('host_id', '=', vm.host_id)
          .where('migrating_to', '=', to)
          .returningAll()
          .executeTakeFirst();
        if (!moved)
          throw new DriverError(`VM ${vmId} was changed by another job meanwhile`, { transient: true });
        await free(tx, vm.host_id, need);
        return info(moved);
      });
    } catch (err) {
      // Once the driver is closed (the process stops) nothing more is written: the re-run finds
      // the reservation and finishes or undoes it.
      await undoMigration(vmId, to, need).catch(() => undefined);
      throw err;
    }
  }

  const rescue = simulatedRescue({
    entry,
    update,
    info,
    sleep: (step) => sleeper.sleep(step),
    passwordHash,
  });

  async function dropCheckpoint(vmId: string, backupId: string): Promise<void> {
    const vm = await find(vmId);
    if (vm?.down_since != null) throw hostDown(vm.host_id);
    await transaction('drop checkpoint', (tx) =>
      tx.deleteFrom('sim_checkpoints').where('vm_id', '=', vmId).where('name', '=', backupId).execute(),
    );
  }

  return {
    name: 'simulated',
    migrate: migrateVm,

    async probe(hostId) {
      await answering([hostId]);
    },

    async powerStates(hostId) {
      await answering([hostId]);
      faults.check('list', hostId);
      const rows = await db
        .selectFrom('sim_vms')
        .select(['id', 'power'])
        .where('host_id', '=', hostId)
        .execute();
      return new Map(rows.map((r) => [r.id, r.power === 'running' ? 'running' : 'stopped'] as const));
    },

    async interfaceCounters(hostId) {
      await answering([hostId]);
      faults.check('list', hostId);
      const rows = await db
        .selectFrom('sim_vms')
        .selectAll()
        .where('host_id', '=', hostId)
        .where('power', '=', 'running')
        .execute();
      const t = now();
      return new Map(rows.map((r) => [r.id, countersAt(r, o.trafficRate ?? NO_TRAFFIC, t)] as const));
    },

    async pausedByDiskErrors(hostId) {
      await answering([hostId]);
      faults.check('list', hostId);
      const rows = await db
        .selectFrom('sim_vms')
        .select(['id', 'disk_error'])
        .where('host_id', '=', hostId)
        .where('power', '=', 'running')
        .where('disk_error', 'is not', null)
        .execute();
      const paused = new Map(
        rows.flatMap((r) =>
          r.disk_error === null ? [] : [[r.id, { disk: 'vda', error: r.disk_error }] as const],
        ),
      );
      const forRoom = rows.some((r) => r.disk_error === 'no_space');
      return { paused, storageHasRoom: forRoom && !(await storageFull(db, hostId)) };
    },

    async resumePaused(vmId) {
      const vm = await entry(vmId, 'resume');
      if (vm.power !== 'running' || vm.disk_error === null) return;
      // The write is retried: on a host whose storage is still full it pauses the VM again.
      await update(vm, {}, false, 'resumed');
    },

    async startingWithHost(hostId) {
      await answering([hostId]);
      faults.check('list', hostId);
      const rows = await db
        .selectFrom('sim_vms')
        .select('id')
        .where('host_id', '=', hostId)
        .where('start_with_host', '=', 1)
        .execute();
      return new Set(rows.map((r) => r.id));
    },

    async setStartWithHost(vmId, on) {
      const vm = await entry(vmId, 'autostart');
      if ((vm.start_with_host === 1) === on) return;
      // Not a change of the VM's life: `updated_at` (its traffic counters' base) stays.
      await db
        .updateTable('sim_vms')
        .set({ start_with_host: on ? 1 : 0 })
        .where('id', '=', vmId)
        .execute();
    },

    async setBandwidth(vmId, mbit) {
      const vm = await entry(vmId, 'set bandwidth');
      if (vm.bandwidth_mbit === mbit) return;
      await update(vm, { bandwidth_mbit: mbit }, false);
    },

    async create(spec) {
      try {
        return await createVm(spec);
      } catch (err) {
        // A create that fails for good leaves nothing behind, not even what an earlier attempt of
        // the same job took; a transient failure keeps the work for the retry to finish.
        if (!(err instanceof DriverError && err.transient)) await remove(spec.vmId);
        throw err;
      }
    },

    async start(vmId) {
      const vm = await entry(vmId, 'start');
      // A VM paused on a failed write is resumed, as libvirt's start of a paused domain does.
      if (vm.power === 'running' && vm.disk_error !== null) return update(vm, { power: 'running' }, false);
      // Running already: marked to start with its host, as libvirt's start marks it.
      if (vm.power === 'running')
        return vm.start_with_host === 1 ? info(vm) : update(vm, { start_with_host: 1 }, false);
      await sleeper.sleep('boot');
      return update(vm, { power: 'running', boot_count: vm.boot_count + 1 }, true);
    },

    async stop(vmId, { timeoutMs }) {
      const vm = await entry(vmId, 'stop');
      // Off already (its guest shut down): not to start with its host either, as on libvirt.
      if (vm.power === 'stopped')
        return vm.start_with_host === 0 ? info(vm) : update(vm, { power: 'stopped' }, false);
      // A guest that takes longer than the timeout to shut down is forced off. A paused one is
      // resumed first (as on libvirt); on a host whose storage is still full its next write
      // pauses it again at once, and it is forced off when the timeout runs out.
      const pausedAgain = vm.disk_error !== null && (await storageFull(db, vm.host_id));
      const graceful = !pausedAgain && timeoutMs / Math.max(o.speed, 1e-9) >= 4000;
      if (graceful) await sleeper.sleep('shutdownGraceful');
      else await sleeper.sleep('powerOff', timeoutMs / Math.max(o.speed, 1e-9));
      return update(vm, { power: 'stopped' }, graceful);
    },

    async reboot(vmId, step) {
      const vm = await entry(vmId, 'reboot');
      const bootId = String(vm.boot_count);
      // Booted since an earlier attempt of this job recorded the identity: that attempt rebooted it.
      if (step?.recorded != null && vm.power === 'running' && step.recorded !== bootId) return info(vm);
      await step?.record(bootId);
      await sleeper.sleep(vm.power === 'running' ? 'reboot' : 'boot');
      return update(vm, { power: 'running', boot_count: vm.boot_count + 1 }, true);
    },

    async powerOff(vmId) {
      const vm = await entry(vmId, 'power off');
      if (vm.power === 'stopped')
        return vm.start_with_host === 0 ? info(vm) : update(vm, { power: 'stopped' }, false);
      await sleeper.sleep('powerOff');
      return update(vm, { power: 'stopped' }, false);
    },

    async resize(vmId, spec) {
      await entry(vmId, 'resize');
      // Host reservation, size and addresses change together or not at all; written at once, so a
      // retry after a crash finds the work done.
      const resized = await transaction('resize', async (tx) => {
        const vm = await get(vmId, tx);
        // One of the two has nothing to do.
        await ipPool.shrink(vmId, spec.ipCount, tx);
        const ips = await ipPool.allocate(vmId, vm.host_id, spec.ipCount, tx);
        const next = { cpu: spec.cpu, ram_gb: spec.ramGb, disk_gb: spec.diskGb, ips: JSON.stringify(ips) };
        await resizeVm(
          tx,
          'sim_vms',
          vm,
          { cpu: spec.cpu, ramGb: spec.ramGb, diskGb: spec.diskGb },
          { ips: next.ips },
        );
        return { ...vm, ...next };
      });
      await sleeper.sleep('resize');
      // Its guest booted again if it runs (as on libvirt, where the VM is off for the change).
      return update(resized, {}, true, 'restarted');
    },

    async setPassword(vmId, _username, password) {
      const vm = await entry(vmId, 'set password');
      await sleeper.sleep('setPassword');
      await update(vm, { password_hash: passwordHash(password) }, true);
      // As on libvirt: a running guest's agent sets it at once; otherwise (off, paused, no
      // agent) the next boot does.
      return vm.power === 'running' && vm.disk_error === null && vm.guest_agent === 1 ? 'now' : 'next_boot';
    },

    async destroy(vmId) {
      const vm = await find(vmId);
      if (vm?.down_since != null) throw hostDown(vm.host_id);
      if (vm) faults.check('destroy', vm.host_id);
      await sleeper.sleep('destroy');
      await remove(vmId);
    },

    async inspect(vmId) {
      const vm = await find(vmId);
      if (vm?.down_since != null) throw hostDown(vm.host_id);
      return vm && info(vm);
    },

    async restoreLegacyBackup(vmId, backupId, step) {
      const vm = await entry(vmId, 'restore');
      const backup = await db
        .selectFrom('sim_backups')
        .selectAll()
        .where('id', '=', backupId)
        .where('vm_id', '=', vmId)
        .executeTakeFirst();
      if (!backup) throw new DriverError(`Backup ${backupId} does not exist`, { transient: false });
      // Powered off while the disk is rewritten, then back to the power state it had.
      await sleeper.sleep('restoreBase', backup.size_gb * 100);
      await update(
        vm,
        { content_generation: backup.content_generation, used_disk_gb: backup.size_gb },
        false,
        'restarted',
      );
      await step?.record(DISK_RESTORED);
    },

    async exportDisk(vmId, backupId, since): Promise<DiskExport> {
      const vm = await entry(vmId, 'backup');
      // What an earlier attempt of this backup left goes: its checkpoint would be a base the
      // backup store never got.
      await transaction('backup', (tx) =>
        tx.deleteFrom('sim_checkpoints').where('vm_id', '=', vmId).where('name', '=', backupId).execute(),
      );
      const base =
        since === null
          ? undefined
          : await db
              .selectFrom('sim_checkpoints')
              .select('content_generation')
              .where('vm_id', '=', vmId)
              .where('name', '=', since)
              .executeTakeFirst();
      // The point in time: the disk as it is now; a checkpoint past it (none can be) starts over.
      const header = { vmId, contentGeneration: vm.content_generation, usedDiskGb: vm.used_disk_gb };
      const from = base && base.content_generation <= header.contentGeneration ? base.content_generation : 0;
      await sleeper.sleep('backupBase', stepMs('backupPerGb') * (exportBytes(header, from) / GIB));
      let committed = false;
      return {
        diskBytes: vm.disk_gb * GIB,
        kind: base && from > 0 ? 'incremental' : 'full',
        since: base && from > 0 ? since : null,
        runs: diskRuns(header, from),
        async commit() {
          if (committed) return;
          await transaction('backup', (tx) =>
            tx
              .insertInto('sim_checkpoints')
              .values({
                vm_id: vmId,
                name: backupId,
                content_generation: header.contentGeneration,
                created_at: now(),
              })
              .onConflict((oc) => oc.columns(['vm_id', 'name']).doNothing())
              .execute(),
          );
          committed = true;
        },
        // The simulated host holds nothing for an export.
        async close() {},
      };
    },

    async importDisk(vmId, _diskBytes, runs, _dataBytes, step) {
      const vm = await entry(vmId, 'restore');
      // Every byte first: a source that fails (or a disk that is not this VM's) changes nothing.
      const header = await readDisk(vmId, runs);
      // Powered off while the disk is rewritten, then back to the power state it had.
      await sleeper.sleep('restoreBase', stepMs('restorePerGb') * header.usedDiskGb);
      await transaction('restore', async (tx) => {
        await tx
          .updateTable('sim_vms')
          .set({
            content_generation: header.contentGeneration,
            used_disk_gb: Math.min(vm.disk_gb, header.usedDiskGb),
            disk_error: diskErrorAfterChange,
            start_with_host: markAfterChange,
            updated_at: now(),
          })
          .where('id', '=', vmId)
          .execute();
        // A replaced disk has no checkpoints: the next export is full.
        await tx.deleteFrom('sim_checkpoints').where('vm_id', '=', vmId).execute();
      });
      await step?.record(DISK_RESTORED);
    },

    // A simulated migration switches over in one transaction: one under way has not.
    async abandonMigration(vmId) {
      const vm = await find(vmId);
      if (vm?.migrating_to) await undoMigration(vmId, vm.migrating_to, needOf(vm));
    },

    dropCheckpoint,
    // A simulated export leaves nothing behind but its checkpoint (its guest is never frozen).
    abandonExport: dropCheckpoint,

    async deleteLegacyBackup(_vmId, backupId) {
      const backup = await db
        .selectFrom('sim_backups')
        .selectAll()
        .where('id', '=', backupId)
        .executeTakeFirst();
      if (!backup) return;
      await answering([backup.host_id]);
      faults.check('delete backup', backup.host_id);
      await sleeper.sleep('deleteBackup');
      await transaction('delete backup', async (tx) => {
        const r = await tx.deleteFrom('sim_backups').where('id', '=', backupId).executeTakeFirst();
        if (r.numDeletedRows > 0n) await freeBackupSpace(tx, backup.host_id, backup.size_gb);
      });
    },

    // Self-service (reinstall, rescue, console): filled in by the driver's own work.
    reinstall: (vmId, spec) =>
      reinstallVm(
        {
          db,
          sleeper,
          now,
          entry,
          info,
          freshUsedGb: (templateId) => round1(baseDiskGb(templateId)),
          passwordHash,
          hostDown,
        },
        vmId,
        spec,
      ),
    rescue: rescue.rescue,
    unrescue: rescue.unrescue,
    async consoles(vmId) {
      const vm = await find(vmId);
      return vm && vm.down_since === null && vm.power === 'running' ? ['serial'] : [];
    },
    async openConsole(vmId, kind) {
      const vm = await entry(vmId, 'console');
      if (kind !== 'serial')
        throw new DriverError('A simulated server has no graphical console', { transient: false });
      if (vm.power !== 'running')
        throw new DriverError(`VM ${vmId} is not running: its console shows nothing`, { transient: false });
      return createSerialConsole({
        hostname: vm.hostname,
        // Read at each login: a password reset since the console opened counts.
        checkPassword: async (password) => {
          const now = await find(vmId);
          return !now?.password_hash || now.password_hash === passwordHash(password);
        },
      });
    },

    async close() {
      sleeper.close();
    },
  };
}
