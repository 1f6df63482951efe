import { type Task, vmChange } from '../task.ts';

/** Back to the power state the service had before the suspension. */
export const unsuspend: Task<'unsuspend'> = async ({ service, driver, from }) => {
  const vm = from.resume === 'stopped' ? await driver.inspect(service.id) : await driver.start(service.id);
  return { ...(vm ? vmChange(vm) : {}), suspendReason: null };
};
