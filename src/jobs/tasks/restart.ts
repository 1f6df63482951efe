import { type Task, vmPatch } from '../task.ts';

export const restart: Task = async ({ service, driver }) => vmPatch(await driver.reboot(service.id));
