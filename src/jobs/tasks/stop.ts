import { type Task, vmChange } from '../task.ts';

export const stop: Task<'stop'> = async ({ service, driver, stopTimeoutMs }) =>
  vmChange(await driver.stop(service.id, { timeoutMs: stopTimeoutMs }));
