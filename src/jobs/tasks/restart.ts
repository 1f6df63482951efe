import { type Task, vmPatch } from '../task.ts';

/** A re-run after a crash must not reboot the guest twice: the driver checks the job's step marker. */
export const restart: Task<'restart'> = async ({ service, driver, stepMarker }) =>
  vmPatch(await driver.reboot(service.id, stepMarker));
