import { tmpdir } from 'node:os';
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import type { Database } from '../store/schema.ts';
import type { HypervisorDriver } from './driver.ts';
import { seedHosts } from './hosts.ts';
import { createIpPool } from './ip-pool.ts';
import { createLibvirtDriver } from './libvirt/libvirt-driver.ts';
import { reportStuckPrivateDirs, sweepPrivateDirs } from './libvirt/storage.ts';
import { createSimulatedDriver } from './simulated/simulated-driver.ts';

/** Where the driver reports its choices (the server's logger, or a test's). */
export interface DriverLog {
  info(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The driver the settings name, ready to use. */
export async function createDriver(
  config: Config,
  db: Kysely<Database>,
  log?: DriverLog,
): Promise<HypervisorDriver> {
  const ipPool = await createIpPool(db, config.simulatedIpPool, Date.now);
  if (config.driver === 'libvirt') {
    await seedHosts(db, 'libvirt', config.libvirtHosts, Date.now());
    // What copies of this machine's processes that ended left in its temporary directory.
    const swept = await sweepPrivateDirs().catch((err: unknown) => {
      log?.warn({ err }, 'libvirt: could not look for temporary directories left by ended processes');
      return { removed: 0, failed: 0 };
    });
    if (swept.removed > 0)
      log?.info(
        { removed: swept.removed, dir: tmpdir() },
        'libvirt: removed temporary directories of processes that ended',
      );
    if (log)
      reportStuckPrivateDirs((dir, err) =>
        log.warn(
          { dir, error: String(err) },
          'libvirt: could not remove the temporary directory of a copy (the next start of the process removes it)',
        ),
      );
    if (swept.failed > 0)
      log?.warn(
        { failed: swept.failed, dir: tmpdir() },
        'libvirt: could not remove temporary directories of processes that ended (remove them by hand)',
      );
    return createLibvirtDriver({
      db,
      ipPool,
      storage: config.libvirtStorage,
      virtType: config.libvirtVirtType,
      onVirtChoice: (hostId, c) =>
        log?.info({ hostId, virtType: c.type, reason: c.reason }, 'libvirt virtualisation'),
      onMigration: (m) => log?.info(m, 'libvirt migration'),
      onLeftover: (l) =>
        log?.warn(l, "libvirt: a VM's old copy stays on a host; the reconciler's next pass there removes it"),
      onGuestThawFailed: (domain, err) =>
        log?.error({ domain, err }, 'libvirt guest file systems may still be frozen after a failed backup'),
      onGuestThawed: (domain, backupId) =>
        log?.warn(
          { domain, backupId },
          'libvirt: thawed a guest left frozen by a backup whose attempts died',
        ),
      ...(log ? { onCommand: (t) => log.debug({ ...t, ms: Math.round(t.ms) }, 'driver command') } : {}),
      bridge: config.libvirtBridge,
      stopTimeoutMs: config.stopTimeoutMs,
      rescueImage: config.rescueImage,
      templateGraceMs: config.templateSweepGraceMs,
      copyPace: config.copyPace,
    });
  }
  await seedHosts(db, 'simulated', config.simulatedHosts, Date.now());
  return createSimulatedDriver({
    db,
    ipPool,
    faults: config.simulatedFaults,
    speed: config.simulatedSpeed,
    trafficRate: config.simulatedTrafficRate,
  });
}
