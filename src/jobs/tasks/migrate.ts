import { runningAsBefore, type Task, vmChange } from '../task.ts';

/**
 * Moves the service's VM to another host (the operator's `migrate`): live when it runs, cold when
 * it is stopped (a suspended service's VM is stopped: it moves cold); the driver reserves the
 * destination's room, moves the VM and gives the source's room back. The service records the
 * host it ends on.
 *
 * Every attempt first looks where the VM is: one whose earlier attempt moved the VM and then
 * died, or failed after the switch-over (the old host stopped answering while its copy was
 * removed), finds it moved (on the host asked for, or, with none asked for, off the host it was
 * on) and is done: asking the driver again would move it a second time, or fail on "already on
 * that host". The attempt count cannot tell: an attempt that failed while its host was
 * unreachable is given back.
 */
export const migrate: Task<'migrate'> = async (tc) => {
  const { service, driver, job } = tc;
  const { host_id: to, from_host_id: from } = job.params;
  const vm = await driver.inspect(service.id);
  // Found moved, it is powered as it was when the job began: an attempt that recorded the move
  // and then could not start it there (a live move found switched over with its guest stopped
  // since) leaves it stopped.
  if (vm && (to === null ? from !== null && vm.hostId !== from : vm.hostId === to))
    return vmChange(await runningAsBefore(tc, vm));
  return vmChange(await driver.migrate(service.id, to));
};
