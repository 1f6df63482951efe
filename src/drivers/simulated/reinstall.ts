import type { Kysely } from 'kysely';
import type { Database, SimVmTable } from '../../store/schema.ts';
import type { ReinstallSpec, VmInfo } from '../driver.ts';
import { diskErrorAfterChange, markAfterChange } from './boot-settle.ts';
import type { createSleeper } from './timings.ts';

/** What the simulated driver lends its reinstall. */
export interface ReinstallDeps {
  readonly db: Kysely<Database>;
  readonly sleeper: ReturnType<typeof createSleeper>;
  readonly now: () => number;
  /** The VM, if its host answers and no fault is drawn for `operation`. */
  readonly entry: (vmId: string, operation: string) => Promise<SimVmTable>;
  readonly info: (vm: SimVmTable) => VmInfo;
  /** Used disk of a fresh VM of the template, in GB. */
  readonly freshUsedGb: (templateId: string) => number;
  readonly passwordHash: (password: string) => string;
  /** The error of a host that does not answer. */
  readonly hostDown: (hostId: string) => Error;
}

/**
 * The disk rebuilt from the template: the content of a fresh VM's disk (generation 1, the
 * template's used space) at the VM's current size, with the new login; the VM's checkpoints go
 * (the next export is full). A running VM is powered off for it and booted again; a stopped one
 * stays off. The power state is never written, and the new disk is written in one step at the
 * end: a re-run after a crash finds the VM as it was asked, and rebuilds again.
 */
export async function reinstallVm(d: ReinstallDeps, vmId: string, spec: ReinstallSpec): Promise<VmInfo> {
  const vm = await d.entry(vmId, 'reinstall');
  const running = vm.power === 'running';
  if (running) await d.sleeper.sleep('powerOff');
  await d.sleeper.sleep('cloneDisk');
  if (running) await d.sleeper.sleep('boot');
  const rebuilt: Partial<SimVmTable> = {
    content_generation: 1,
    used_disk_gb: Math.min(vm.disk_gb, d.freshUsedGb(spec.templateId)),
    hostname: spec.hostname,
    password_hash: d.passwordHash(spec.password),
    boot_count: running ? vm.boot_count + 1 : vm.boot_count,
    updated_at: d.now(),
  };
  d.sleeper.ensureOpen('reinstall');
  await d.db.transaction().execute(async (tx) => {
    // The host is asked to do it only if it answers now (an outage may have begun meanwhile).
    const down = await tx
      .selectFrom('sim_host_outages')
      .select('host_id')
      .where('host_id', '=', vm.host_id)
      .executeTakeFirst();
    if (down) throw d.hostDown(vm.host_id);
    // A running guest booted on its new disk: paused at once where the storage is full (boot-settle.ts).
    await tx
      .updateTable('sim_vms')
      .set({ ...rebuilt, disk_error: diskErrorAfterChange, start_with_host: markAfterChange })
      .where('id', '=', vmId)
      .execute();
    await tx.deleteFrom('sim_checkpoints').where('vm_id', '=', vmId).execute();
  });
  return d.info({ ...vm, ...rebuilt });
}
