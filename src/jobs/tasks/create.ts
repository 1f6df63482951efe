import { DriverError } from '../../drivers/driver.ts';
import { writeDefaultPtrs } from '../reverse-dns.ts';
import { type Task, vmChange } from '../task.ts';

/**
 * Creates the VM; then, with a default PTR pattern (VRP_RDNS_DEFAULT), writes each new address's
 * default PTR record. A DNS server that fails does not fail the server: the warning is logged
 * and the default can be written later by setting the address's PTR to null.
 */
export const create: Task<'create'> = async (tc) => {
  const change = await createVm(tc);
  const { db, reverseDns, clock, log, service, signal } = tc;
  try {
    await writeDefaultPtrs({ db, reverseDns, clock }, service.id, signal);
  } catch (err) {
    log.warn({ err, serviceId: service.id }, 'the default PTR records could not be written');
  }
  return change;
};

const createVm: Task<'create'> = async ({ service, driver, secretBox, job, maxAttempts }) => {
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
      await driver.destroy(service.id);
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
