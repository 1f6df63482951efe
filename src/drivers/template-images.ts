import type { Config } from '../config.ts';

/**
 * Whether the driver the settings name boots VMs from each OS template's image on the hosts
 * (catalogue `image`); the simulated one needs none. Read by the order checks (through the
 * catalogue) and `vrp catalog import`, which never load a driver themselves.
 */
export function templatesNeedImages(config: Pick<Config, 'driver'>): boolean {
  return config.driver === 'libvirt';
}
