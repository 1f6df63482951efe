import type { HypervisorDriver } from '../../drivers/driver.ts';

/**
 * What the HTTP app needs of the hypervisor driver for the console in the browser: which consoles
 * a VM has, and a connection to one. Given to buildApp by the process that owns the driver;
 * without it the console answers 503 `console_unavailable`.
 */
export type ServiceConsoles = Pick<HypervisorDriver, 'consoles' | 'openConsole'>;

/** The part of buildApp's options that route files of the console read. */
export interface ConsoleOptions {
  readonly consoles?: ServiceConsoles;
}
