/**
 * A driver whose chosen calls go through the test's own functions first (to hold a call until the
 * test lets it go, or to count calls); every other call is the driver's own.
 */
import type { HypervisorDriver } from '../../src/drivers/driver.ts';

export function interceptDriver(
  driver: HypervisorDriver,
  calls: Partial<{ [K in keyof HypervisorDriver]: HypervisorDriver[K] }>,
): HypervisorDriver {
  return new Proxy(driver, {
    get(target, prop) {
      const own = calls[prop as keyof HypervisorDriver];
      if (own !== undefined) return own;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
