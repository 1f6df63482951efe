import { type Task, vmChange } from '../task.ts';

/** The server's own system again, running. */
export const unrescue: Task<'unrescue'> = async ({ service, driver }) => {
  const vm = await driver.unrescue(service.id, 'running');
  return { ...vmChange(vm), rescueSince: null };
};
