import { type Task, vmChange } from '../task.ts';

/** Boots the rescue system with the server's disk attached; the worker ends it after VRP_RESCUE_MAX. */
export const rescue: Task<'rescue'> = async ({ service, driver, secretBox, job, clock }) => {
  const vm = await driver.rescue(service.id, {
    username: job.params.username,
    password: secretBox.open(job.params.password_enc),
  });
  return { ...vmChange(vm), rescueSince: clock.now() };
};
