import { type Task, vmChange } from '../task.ts';

/** New amounts; the driver keeps the power state it found, and refuses a disk that would shrink. */
export const upgrade: Task<'upgrade'> = async ({ service, driver, job }) => {
  const p = job.params;
  const vm = await driver.resize(service.id, { cpu: p.cpu, ramGb: p.ram, diskGb: p.hdd, ipCount: p.ip });
  return { ...vmChange(vm), cpu: p.cpu, ram: p.ram, hdd: p.hdd, ipCount: p.ip, backup: p.backup };
};
