import type { ExpressionBuilder, Kysely, Updateable } from 'kysely';
import type { Database, SimVmTable } from '../../store/schema.ts';
import { free } from '../hosts.ts';
import { diskErrorOnRun } from './boot-settle.ts';
import { addTraffic } from './traffic.ts';

/**
 * What happens to a simulated VM outside the API: a person at the host's console, or the guest
 * itself. The simulated hypervisor lives in the store, so these are writes to it, made by
 * whoever holds the store (tests, the operator console's tests), like a `virsh` command on a
 * real host; the API learns of them only through the power-state reconciler
 * (jobs/reconciler.ts) and the check at the start of each job, as it would on libvirt.
 *
 * Each returns false when the VM does not exist.
 */
export const outside = {
  /** The guest powers itself off, or `virsh destroy`: the VM is shut off. */
  powerOff(db: Kysely<Database>, vmId: string, now = Date.now()): Promise<boolean> {
    // Off: no longer paused either.
    return setVm(db, vmId, { power: 'stopped', disk_error: null, updated_at: now });
  },

  /** `virsh start` (or a host's autostart): the VM boots. */
  async powerOn(db: Kysely<Database>, vmId: string, now = Date.now()): Promise<boolean> {
    const r = await db
      .updateTable('sim_vms')
      .set(bootedAt(now))
      .where('id', '=', vmId)
      .where('power', '=', 'stopped')
      .executeTakeFirst();
    if (r.numUpdatedRows > 0n) return true;
    return (
      (await db.selectFrom('sim_vms').select('id').where('id', '=', vmId).executeTakeFirst()) !== undefined
    );
  },

  /**
   * The guest's agent stops answering (an image without qemu-guest-agent, or the service
   * stopped inside the guest), or answers again: a password reset then applies at the next
   * boot, or at once.
   */
  async guestAgent(db: Kysely<Database>, vmId: string, running: boolean, now = Date.now()): Promise<boolean> {
    return setVm(db, vmId, { guest_agent: running ? 1 : 0, updated_at: now });
  },

  /**
   * `virsh undefine` and the disk deleted: the VM is gone, and its room on the host with it.
   * Its addresses stay taken (the API's pool gives them back when the service is terminated).
   */
  vanish(db: Kysely<Database>, vmId: string): Promise<boolean> {
    return db.transaction().execute(async (tx) => {
      const vm = await tx.deleteFrom('sim_vms').where('id', '=', vmId).returningAll().executeTakeFirst();
      if (!vm) return false;
      await free(tx, vm.host_id, { cpu: vm.cpu, ramGb: vm.ram_gb, diskGb: vm.disk_gb });
      return true;
    });
  },

  /**
   * The host stops answering (its network or its hypervisor is down): from now on every
   * operation on it, and on its VMs, fails as transient with "Host X does not answer", and so do
   * its power-state listing and its probe (host health). Its VMs keep their state.
   */
  async hostDown(db: Kysely<Database>, hostId: string, now = Date.now()): Promise<void> {
    await db
      .insertInto('sim_host_outages')
      .values({ host_id: hostId, since: now })
      .onConflict((oc) => oc.column('host_id').doNothing())
      .execute();
  },

  /**
   * The running VM receives `inBytes` and sends `outBytes` through its interface: its counters
   * grow by them (on top of VRP_SIM_TRAFFIC_RATE's growth), as the traffic sampler will read.
   */
  traffic: addTraffic,

  /**
   * The host's storage has no room left (a thin disk's growth filled its pool): every running VM
   * on it is paused for want of room (its guest's next write fails; QEMU's `werror=enospc`), and
   * so is any that runs on it from now on (booted, resumed), until outside.storageFreed.
   */
  async storageFull(db: Kysely<Database>, hostId: string, now = Date.now()): Promise<void> {
    await db.transaction().execute(async (tx) => {
      await tx
        .insertInto('sim_storage_full')
        .values({ host_id: hostId, since: now })
        .onConflict((oc) => oc.column('host_id').doNothing())
        .execute();
      await tx
        .updateTable('sim_vms')
        .set({ disk_error: 'no_space', updated_at: now })
        .where('host_id', '=', hostId)
        .where('power', '=', 'running')
        .where('disk_error', 'is', null)
        .execute();
    });
  },

  /**
   * The host's storage has room again. The VMs it paused stay paused (QEMU retries the write
   * only when resumed): the power-state reconciler resumes them at its next pass.
   */
  async storageFreed(db: Kysely<Database>, hostId: string): Promise<void> {
    await db.deleteFrom('sim_storage_full').where('host_id', '=', hostId).execute();
  },

  /**
   * A write to the running VM's disk fails otherwise than for want of room (a failing disk, a
   * storage path gone): the VM is paused (`io_error`), and no reconciler resumes it. Its stop,
   * reboot or start resumes it (the write is retried, and goes through where there is room).
   */
  async diskFails(db: Kysely<Database>, vmId: string, now = Date.now()): Promise<boolean> {
    await db
      .updateTable('sim_vms')
      .set({ disk_error: 'io_error', updated_at: now })
      .where('id', '=', vmId)
      .where('power', '=', 'running')
      .execute();
    return (
      (await db.selectFrom('sim_vms').select('id').where('id', '=', vmId).executeTakeFirst()) !== undefined
    );
  },

  /**
   * `virsh autostart [--disable]` by hand: the host's boot starts the VM, or does not. The
   * power-state reconciler's next pass sets it back to what the API shows.
   */
  async startWithHost(db: Kysely<Database>, vmId: string, on: boolean): Promise<boolean> {
    return setVm(db, vmId, { start_with_host: on ? 1 : 0 });
  },

  /**
   * The host reboots (a power cut, a kernel update, a crash), at once: every VM on it goes off,
   * and those marked to start with it (start_with_host) boot again, their own system (paused at
   * once where its storage is full). A VM in rescue (its rescue's boot unmarked it) comes back
   * off, out of rescue: the rescue system ran as a live definition, gone with the reboot. A host
   * that stays down a while is hostDown's.
   */
  async hostReboot(db: Kysely<Database>, hostId: string, now = Date.now()): Promise<void> {
    await db.transaction().execute(async (tx) => {
      await tx
        .updateTable('sim_vms')
        .set(bootedAt(now))
        .where('host_id', '=', hostId)
        .where('start_with_host', '=', 1)
        .execute();
      await tx
        .updateTable('sim_vms')
        .set({ power: 'stopped', disk_error: null, rescue_password_hash: null, updated_at: now })
        .where('host_id', '=', hostId)
        .where('start_with_host', '=', 0)
        .execute();
    });
  },

  /** The host answers again. */
  async hostUp(db: Kysely<Database>, hostId: string): Promise<void> {
    await db.deleteFrom('sim_host_outages').where('host_id', '=', hostId).execute();
  },
};

/** A boot the driver did not make (by hand, the host's own): one boot more, paused at once where the storage is full. */
const bootedAt = (now: number) => (eb: ExpressionBuilder<Database, 'sim_vms'>) => ({
  power: 'running',
  boot_count: eb('boot_count', '+', 1),
  disk_error: diskErrorOnRun,
  // Its own system boots (its persistent definition): a rescue system ran as a live one only.
  rescue_password_hash: null,
  updated_at: now,
});

/** Writes `patch` to the VM's row: false when there is no such VM. */
async function setVm(db: Kysely<Database>, vmId: string, patch: Updateable<SimVmTable>): Promise<boolean> {
  const r = await db.updateTable('sim_vms').set(patch).where('id', '=', vmId).executeTakeFirst();
  return r.numUpdatedRows > 0n;
}
