import type { FaultConfig } from '../../config.ts';
import { DriverError } from '../driver.ts';

/** Fault injection: before an operation does anything, it may fail as configured (VRP_SIM_FAULTS). */
export function createFaults(config: FaultConfig, random: () => number = Math.random) {
  return {
    check(operation: string, hostId: string): void {
      if (config.permanent > 0 && random() < config.permanent) {
        throw new DriverError(`Simulated permanent fault: ${operation} refused by host ${hostId}`, {
          transient: false,
        });
      }
      if (config.transient > 0 && random() < config.transient) {
        throw new DriverError(`Simulated transient fault: host ${hostId} busy during ${operation}`, {
          transient: true,
        });
      }
    },
  };
}
