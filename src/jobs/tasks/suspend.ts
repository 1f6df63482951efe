import { type Task, vmChange } from '../task.ts';

/** Administrative lock: the power goes off at once; the reason is kept for details. */
export const suspend: Task<'suspend'> = async ({ service, driver, job }) => {
  const vm = await driver.powerOff(service.id);
  return { ...vmChange(vm), suspendReason: job.params.reason };
};
