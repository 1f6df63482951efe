import { type Task, vmPatch } from '../task.ts';

/** Administrative lock: the power goes off at once; the reason is kept for details. */
export const suspend: Task<'suspend'> = async ({ service, driver, job }) => {
  const vm = await driver.powerOff(service.id);
  return { ...vmPatch(vm), suspend_reason: job.params.reason };
};
