import { type Task, vmPatch } from '../task.ts';

export const start: Task = async ({ service, driver }) => vmPatch(await driver.start(service.id));
