import type { SimVmTable } from '../../store/schema.ts';
import type { PowerState, RescueLogin, VmInfo } from '../driver.ts';
import type { Step } from './timings.ts';

/** What the simulated driver lends its rescue: the VM (its host answering), a write of some columns, the step timings. */
export interface RescueDeps {
  /** The VM's row, after the outage and fault checks of `operation`. */
  readonly entry: (vmId: string, operation: string) => Promise<SimVmTable>;
  /** Writes `patch` of the VM; `write`: the VM's own disk changes (content moves on). */
  readonly update: (vm: SimVmTable, patch: Partial<SimVmTable>, write: boolean) => Promise<VmInfo>;
  readonly info: (vm: SimVmTable) => VmInfo;
  readonly sleep: (step: Step) => Promise<void>;
  readonly passwordHash: (password: string) => string;
}

/**
 * Rescue on the simulated hypervisor: the VM boots the rescue system (running, marked by the
 * rescue login's hash) with its own disk attached but untouched, so its content stays as it was;
 * unrescue boots its own system again, or leaves it off.
 */
export function simulatedRescue(d: RescueDeps) {
  return {
    async rescue(vmId: string, login: RescueLogin): Promise<VmInfo> {
      const vm = await d.entry(vmId, 'rescue');
      const hash = d.passwordHash(login.password);
      if (vm.rescue_password_hash === hash && vm.power === 'running') return d.info(vm);
      // Its own system shuts down first (forced: the rescue is asked for a server in trouble).
      if (vm.power === 'running') await d.sleep('powerOff');
      await d.sleep('boot');
      return d.update(
        vm,
        { power: 'running', boot_count: vm.boot_count + 1, rescue_password_hash: hash },
        false,
      );
    },

    async unrescue(vmId: string, power: PowerState): Promise<VmInfo> {
      const vm = await d.entry(vmId, 'unrescue');
      if (vm.rescue_password_hash === null) {
        // Not in rescue (a re-run, or never): only the power state; a VM paused on a failed
        // write is resumed, as libvirt's start of a paused domain does.
        // Its mark too, as libvirt's start (marks) and stop (unmarks) leave it.
        const marked = vm.start_with_host === 1;
        if (power === 'running' && vm.power === 'running' && (vm.disk_error !== null || !marked))
          return d.update(vm, { power: 'running' }, false);
        if (power === 'stopped' && vm.power === 'stopped' && marked)
          return d.update(vm, { power: 'stopped' }, false);
        if (vm.power === power) return d.info(vm);
        if (power === 'stopped') {
          await d.sleep('powerOff');
          return d.update(vm, { power: 'stopped' }, false);
        }
        await d.sleep('boot');
        return d.update(vm, { power: 'running', boot_count: vm.boot_count + 1 }, true);
      }
      if (vm.power === 'running') await d.sleep('powerOff');
      if (power === 'stopped') return d.update(vm, { power: 'stopped', rescue_password_hash: null }, false);
      await d.sleep('boot');
      // Its own system boots: the boot writes to its disk, as any boot does.
      return d.update(
        vm,
        { power: 'running', boot_count: vm.boot_count + 1, rescue_password_hash: null },
        true,
      );
    },
  };
}
