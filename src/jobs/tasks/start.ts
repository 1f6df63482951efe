import { type Task, vmPatch } from '../task.ts';

export const start: Task<'start'> = async ({ service, driver }) => vmPatch(await driver.start(service.id));
