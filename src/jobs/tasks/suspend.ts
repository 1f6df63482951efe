import { type Task, vmChange } from '../task.ts';

/**
 * Administrative lock: the power goes off at once; the reason is kept for details. A server in
 * rescue leaves it first (its own system, off), so unsuspending boots its own system.
 */
export const suspend: Task<'suspend'> = async ({ service, driver, job, from }) => {
  if (from.status === 'rescue') await driver.unrescue(service.id, 'stopped');
  const vm = await driver.powerOff(service.id);
  return { ...vmChange(vm), suspendReason: job.params.reason, rescueSince: null };
};
