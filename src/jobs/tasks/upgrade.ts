import { DriverError } from '../../drivers/driver.ts';
import { type Task, vmPatch } from '../task.ts';

/** New amounts; the driver keeps the power state it found. */
export const upgrade: Task = async ({ service, driver, job }) => {
  const p = job.params as { cpu: number; ram: number; hdd: number; ip: number; backup: number };
  if (p.hdd < service.hdd) {
    throw new DriverError(`The disk cannot shrink from ${service.hdd} GB to ${p.hdd} GB`, {
      transient: false,
    });
  }
  const vm = await driver.resize(service.id, { cpu: p.cpu, ramGb: p.ram, diskGb: p.hdd, ipCount: p.ip });
  return { ...vmPatch(vm), cpu: p.cpu, ram: p.ram, hdd: p.hdd, ip_count: p.ip, backup: p.backup };
};
