/**
 * The driver as a task sees it: once the job's signal fires (the worker is stopping and the job
 * ran past the grace period), no new driver call starts and the task stops waiting on the one
 * under way, so it ends at once and its job goes back to the queue. The abandoned call is left to
 * finish or fail on its own: driver operations are idempotent, and the re-run finds its work.
 *
 * With the attempt's `fence` (its lease, jobs/lease.ts), no call starts once the lease has run
 * out un-renewed. The calls run inside that fence (run-job.ts runs the task in it), so the call
 * under way takes no further step on the host either (drivers/fence.ts), as another worker may
 * be running the job by then; `signal` then fires too (the lease's `stop`), and the task stops
 * waiting.
 */
import type { HypervisorDriver } from '../drivers/driver.ts';
import type { Fence } from '../drivers/fence.ts';

export function abortableDriver(
  driver: HypervisorDriver,
  signal: AbortSignal,
  fence?: Fence,
): HypervisorDriver {
  const wrap =
    <T extends unknown[], R>(call: (...args: T) => Promise<R>) =>
    async (...args: T): Promise<R> => {
      signal.throwIfAborted();
      fence?.check();
      return untilAborted(call.apply(driver, args), signal);
    };
  return {
    name: driver.name,
    powerStates: wrap(driver.powerStates),
    migrate: wrap(driver.migrate),
    abandonMigration: wrap(driver.abandonMigration),
    probe: wrap(driver.probe),
    interfaceCounters: wrap(driver.interfaceCounters),
    setBandwidth: wrap(driver.setBandwidth),
    create: wrap(driver.create),
    start: wrap(driver.start),
    stop: wrap(driver.stop),
    reboot: wrap(driver.reboot),
    powerOff: wrap(driver.powerOff),
    resize: wrap(driver.resize),
    setPassword: wrap(driver.setPassword),
    destroy: wrap(driver.destroy),
    inspect: wrap(driver.inspect),
    exportDisk: wrap(driver.exportDisk),
    importDisk: wrap(driver.importDisk),
    dropCheckpoint: wrap(driver.dropCheckpoint),
    abandonExport: wrap(driver.abandonExport),
    restoreLegacyBackup: wrap(driver.restoreLegacyBackup),
    deleteLegacyBackup: wrap(driver.deleteLegacyBackup),
    reinstall: wrap(driver.reinstall),
    rescue: wrap(driver.rescue),
    unrescue: wrap(driver.unrescue),
    consoles: wrap(driver.consoles),
    openConsole: wrap(driver.openConsole),
    close: () => driver.close(),
  };
}

/** `work`, or the signal's reason if it fires first. */
function untilAborted<R>(work: Promise<R>, signal: AbortSignal): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    const onAbort = () => {
      // The abandoned work may still fail: that is no longer anyone's concern.
      work.catch(() => {});
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
