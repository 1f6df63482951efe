import { type Task, vmPatch } from '../task.ts';

export const stop: Task<'stop'> = async ({ service, driver, stopTimeoutMs }) =>
  vmPatch(await driver.stop(service.id, { timeoutMs: stopTimeoutMs }));
