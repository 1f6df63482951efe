import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import type { Database } from '../store/schema.ts';
import type { HypervisorDriver } from './driver.ts';
import { createIpPool } from './ip-pool.ts';
import { syncHosts } from './simulated/hosts.ts';
import { createSimulatedDriver } from './simulated/simulated-driver.ts';

/** The driver the settings name, ready to use. */
export async function createDriver(config: Config, db: Kysely<Database>): Promise<HypervisorDriver> {
  if (config.driver === 'libvirt') {
    throw new Error(
      'VRP_DRIVER=libvirt: the libvirt driver is not available in this version yet; use simulated',
    );
  }
  await syncHosts(db, config.simulatedHosts);
  const ipPool = await createIpPool(db, config.simulatedIpPool, Date.now);
  return createSimulatedDriver({ db, ipPool, faults: config.simulatedFaults, speed: config.simulatedSpeed });
}
