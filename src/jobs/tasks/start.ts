import { type Task, vmChange } from '../task.ts';

export const start: Task<'start'> = async ({ service, driver }) => vmChange(await driver.start(service.id));
