import { type Task, vmChange } from '../task.ts';

/**
 * Moves the service's VM to another host (the operator's `migrate`): live when it runs, cold when
 * it is stopped; the driver reserves the destination's room, moves the VM and gives the source's
 * room back. The service records the host it ends on.
 */
export const migrate: Task<'migrate'> = async ({ service, driver, job }) =>
  vmChange(await driver.migrate(service.id, job.params.host_id));
