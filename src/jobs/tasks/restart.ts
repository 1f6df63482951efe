import { type Task, vmChange } from '../task.ts';

/** A re-run after a crash must not reboot the guest twice: the driver checks the job's step marker. */
export const restart: Task<'restart'> = async ({ service, driver, stepMarker }) =>
  vmChange(await driver.reboot(service.id, stepMarker));
