import { type Task, vmPatch } from '../task.ts';

/** Administrative lock: the power goes off at once; the reason is kept for details. */
export const suspend: Task = async ({ service, driver, job }) => {
  const vm = await driver.powerOff(service.id);
  const reason = typeof job.params['reason'] === 'string' ? job.params['reason'] : null;
  return { ...vmPatch(vm), suspend_reason: reason };
};
