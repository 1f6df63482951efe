import { type Kysely, sql } from 'kysely';
import type { Database } from '../../store/schema.ts';

/**
 * What a boot settles of a simulated VM, in the statement that records it: its pause, and its
 * start with its host (the marks' rule is in simulated-driver.ts, update()).
 *
 * A simulated host's full storage, as on libvirt (docs/libvirt.md, *A host whose storage fills
 * up*): QEMU pauses a guest whose write to its disk fails (`werror=enospc`), and a resume retries
 * the write. The one rule: a guest that runs from a given moment on (booted, resumed, rebooted,
 * or back after a resize, restore or rebuild) on a host whose storage is full writes at once,
 * and is paused for want of room; on a host with room it runs. A write that failed otherwise
 * (`io_error`, outside.diskFails) goes through when retried on a host with room.
 */

/** `sim_vms.disk_error` of a VM of the updated row that runs from now on. */
export const diskErrorOnRun = sql<
  'no_space' | null
>`case when exists (select 1 from sim_storage_full f where f.host_id = sim_vms.host_id) then 'no_space' end`;

/**
 * `sim_vms.disk_error` of a VM of the updated row that was powered off for the change and is
 * back in the power state it had (a resize, a restore, a rebuild), read as the row is written:
 * a running one is booted again (as diskErrorOnRun), a stopped one has no pause.
 */
export const diskErrorAfterChange = sql<
  'no_space' | null
>`case when sim_vms.power = 'running' and exists (select 1 from sim_storage_full f where f.host_id = sim_vms.host_id) then 'no_space' end`;

/**
 * `sim_vms.start_with_host` of a VM of the updated row that was powered off for the change and is
 * back in the power state it had: marked if it runs, as libvirt's stop then start leave it.
 */
export const markAfterChange = sql<number>`case when sim_vms.power = 'running' then 1 else 0 end`;

/** Whether the host's storage is full (outside.storageFull). */
export async function storageFull(db: Kysely<Database>, hostId: string): Promise<boolean> {
  const row = await db
    .selectFrom('sim_storage_full')
    .select('host_id')
    .where('host_id', '=', hostId)
    .executeTakeFirst();
  return row !== undefined;
}
