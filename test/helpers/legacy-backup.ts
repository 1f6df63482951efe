import type { Kysely } from 'kysely';
import { reserveBackupSpace } from '../../src/drivers/hosts.ts';
import type { Database } from '../../src/store/schema.ts';

/**
 * A legacy backup of a simulated VM as a store migrated from before the backup store holds it: a
 * full copy of the disk as it is now on the VM's host (its `sim_backups` row), taking backup
 * storage on that host (what the simulated driver's old backup reserved). Returns its size.
 */
export async function legacySimBackup(db: Kysely<Database>, vmId: string, backupId: string): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const vm = await tx.selectFrom('sim_vms').selectAll().where('id', '=', vmId).executeTakeFirstOrThrow();
    const sizeGb = Math.ceil(vm.used_disk_gb * 10) / 10;
    if (!(await reserveBackupSpace(tx, vm.host_id, sizeGb)))
      throw new Error(`no backup room on ${vm.host_id}`);
    await tx
      .insertInto('sim_backups')
      .values({
        id: backupId,
        vm_id: vmId,
        host_id: vm.host_id,
        size_gb: sizeGb,
        content_generation: vm.content_generation,
        created_at: Date.now(),
      })
      .execute();
    return sizeGb;
  });
}
