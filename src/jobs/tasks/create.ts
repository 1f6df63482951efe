import { DriverError } from '../../drivers/driver.ts';
import { beforeRelease, removeServicePtrs, writeGainedPtrs } from '../reverse-dns.ts';
import { type Task, vmChange } from '../task.ts';

/**
 * Creates the VM; then, with a DNS server, writes each new address's PTR record: the default
 * (VRP_RDNS_DEFAULT), or none, replacing what an earlier holder may have left. A DNS server that
 * fails does not fail the server: the warning is logged and the default can be written later by
 * setting the address's PTR to null.
 */
export const create: Task<'create'> = async (tc) => {
  const change = await createVm(tc);
  await writeGainedPtrs(tc, tc.service.id);
  return change;
};

const createVm: Task<'create'> = async (tc) => {
  const { service, driver, secretBox, job, maxAttempts } = tc;
  try {
    const vm = await driver.create({
      vmId: service.id,
      hostname: service.domainName,
      username: service.username,
      password: secretBox.open(service.passwordEnc),
      templateId: service.templateId,
      cpu: service.cpu,
      ramGb: service.ram,
      diskGb: service.hdd,
      ipCount: service.ipCount,
      sshKeys: service.sshKeys,
    });
    return vmChange(vm);
  } catch (err) {
    // A transient failure keeps the work for the retry; on the last attempt there is none, so
    // what the attempts took (addresses, host room, disk, the seed with the password) goes back.
    if (!(err instanceof DriverError) || !err.transient || job.attempts < maxAttempts) throw err;
    const gaveUp = `${err.message}; gave up after ${job.attempts} attempt${job.attempts === 1 ? '' : 's'}`;
    try {
      // A PTR set meanwhile goes before the addresses do.
      await beforeRelease(() => removeServicePtrs(tc, service.id, tc.signal));
      await driver.destroy(service.id, { createGivingUp: true });
    } catch (cleanup) {
      throw new DriverError(
        `${gaveUp}; the VM could not be removed yet: terminate the service to remove it`,
        {
          transient: false,
          cause: cleanup,
          details: cleanup instanceof DriverError ? cleanup.details : err.details,
        },
      );
    }
    throw new DriverError(`${gaveUp}; nothing was kept`, {
      transient: false,
      cause: err,
      details: err.details,
    });
  }
};
