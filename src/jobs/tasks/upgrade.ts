import { beforeRelease, removeShrunkPtrs, writeGainedPtrs, writeServicePtrs } from '../reverse-dns.ts';
import { runningAsBefore, type Task, vmChange } from '../task.ts';

/**
 * New amounts; the driver keeps the power state it found, and refuses a disk that would shrink.
 * A server that was running when the job began runs at its end, also after an attempt that
 * powered it off and failed.
 *
 * Addresses it gives back lose their PTR records first (a DNS server that fails is a transient
 * error: the job is retried, and the addresses stay the service's meanwhile); if the resize then
 * fails, those it still holds get their records back. Addresses it gains get theirs as a
 * create's do (writeGainedPtrs).
 */
export const upgrade: Task<'upgrade'> = async (tc) => {
  const { service, driver, job, signal } = tc;
  const p = job.params;
  const before = new Set(service.ips);
  const removed = await beforeRelease(() => removeShrunkPtrs(tc, service.id, p.ip, signal));
  let resized: Awaited<ReturnType<typeof driver.resize>>;
  try {
    resized = await driver.resize(service.id, { cpu: p.cpu, ramGb: p.ram, diskGb: p.hdd, ipCount: p.ip });
  } catch (err) {
    if (removed.length > 0) await writeServicePtrs(tc, service.id, removed, signal).catch(() => undefined);
    throw err;
  }
  const gained = resized.ips.filter((ip) => !before.has(ip));
  if (gained.length > 0) await writeGainedPtrs(tc, service.id, gained);
  const vm = await runningAsBefore(tc, resized);
  return { ...vmChange(vm), cpu: p.cpu, ram: p.ram, hdd: p.hdd, ipCount: p.ip, backup: p.backup };
};
