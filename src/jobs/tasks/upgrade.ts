import { runningAsBefore, type Task, vmChange } from '../task.ts';

/**
 * New amounts; the driver keeps the power state it found, and refuses a disk that would shrink.
 * A server that was running when the job began runs at its end, also after an attempt that
 * powered it off and failed.
 */
export const upgrade: Task<'upgrade'> = async (tc) => {
  const { service, driver, job } = tc;
  const p = job.params;
  const resized = await driver.resize(service.id, { cpu: p.cpu, ramGb: p.ram, diskGb: p.hdd, ipCount: p.ip });
  const vm = await runningAsBefore(tc, resized);
  return { ...vmChange(vm), cpu: p.cpu, ram: p.ram, hdd: p.hdd, ipCount: p.ip, backup: p.backup };
};
