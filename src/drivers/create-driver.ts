import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import type { Database } from '../store/schema.ts';
import type { HypervisorDriver } from './driver.ts';
import { syncHosts } from './hosts.ts';
import { createIpPool } from './ip-pool.ts';
import { createLibvirtDriver } from './libvirt/libvirt-driver.ts';
import { detectVirtType } from './libvirt/virt-type.ts';
import { createSimulatedDriver } from './simulated/simulated-driver.ts';

/** The driver the settings name, ready to use. */
export async function createDriver(config: Config, db: Kysely<Database>): Promise<HypervisorDriver> {
  const ipPool = await createIpPool(db, config.simulatedIpPool, Date.now);
  if (config.driver === 'libvirt') {
    await syncHosts(db, config.libvirtHosts);
    return createLibvirtDriver({
      db,
      ipPool,
      hosts: config.libvirtHosts,
      storage: config.libvirtStorage,
      virtType: await detectVirtType(config.libvirtVirtType, config.libvirtHosts[0]!.uri),
      bridge: config.libvirtBridge,
      stopTimeoutMs: config.stopTimeoutMs,
    });
  }
  await syncHosts(db, config.simulatedHosts);
  return createSimulatedDriver({
    db,
    ipPool,
    hostIds: config.simulatedHosts.map((h) => h.id),
    faults: config.simulatedFaults,
    speed: config.simulatedSpeed,
  });
}
