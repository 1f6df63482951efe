import { DriverError } from '../driver.ts';
import { checkFence, fenceSignal } from '../fence.ts';

/**
 * How long each step of the simulated hypervisor takes at VRP_SIMULATED_SPEED=1, in ms:
 * close to what a KVM host with local SSD storage shows for a small cloud image.
 */
const STEP_MS = {
  cloneDisk: 4000,
  boot: 4000,
  shutdownGraceful: 4000,
  powerOff: 500,
  reboot: 5000,
  resize: 3000,
  setPassword: 1000,
  destroy: 2000,
  backupBase: 2000,
  backupPerGb: 100,
  restoreBase: 2000,
  restorePerGb: 100,
  deleteBackup: 500,
  /** A live migration: set-up, then RAM copied at 1 GB/s (migratePerGbRam, per GB of RAM)... */
  migrateLiveBase: 3000,
  migratePerGbRam: 1000,
  /** ...and the guest paused while the last dirty pages and the device state move. */
  migratePause: 300,
  /** A cold migration: set-up, then the used part of the disk copied (coldMigratePerGb, per GB used). */
  coldMigrateBase: 2000,
  coldMigratePerGb: 500,
} as const;

/** How long a step takes at speed 1, in ms (benchmarks and docs compare with it). */
export function stepMs(step: Step): number {
  return STEP_MS[step];
}

export type Step = keyof typeof STEP_MS;

/**
 * Sleeps for a step scaled by `speed`; speed 0 sets no timer at all. Once closed (driver close),
 * pending and later sleeps fail with a transient DriverError, so the step writes nothing more and
 * the job system retries it later, in a process that is still running.
 */
export function createSleeper(speed: number) {
  const timers = new Set<{ timer: NodeJS.Timeout; fail: () => void }>();
  let closed = false;
  const closedError = (step: string) =>
    new DriverError(`The simulated hypervisor was closed before ${step} finished`, { transient: true });
  return {
    async sleep(step: Step, extraMs = 0): Promise<void> {
      if (closed) throw closedError(step);
      // A job attempt whose lease ran out takes no further step (fence.ts), before it or after it.
      checkFence();
      const ms = (STEP_MS[step] + extraMs) * speed;
      if (ms <= 0) return;
      // A fence that goes down meanwhile ends the step's wait at once.
      const fence = fenceSignal();
      await new Promise<void>((resolve, reject) => {
        const down = () => {
          clearTimeout(entry.timer);
          timers.delete(entry);
          reject(fence?.reason);
        };
        const entry = {
          timer: setTimeout(() => {
            timers.delete(entry);
            fence?.removeEventListener('abort', down);
            resolve();
          }, ms),
          fail: () => {
            fence?.removeEventListener('abort', down);
            reject(closedError(step));
          },
        };
        timers.add(entry);
        fence?.addEventListener('abort', down, { once: true });
      });
    },
    /** Throws the transient close error if closed: a guard before a write that no sleep precedes. */
    ensureOpen(step: string): void {
      if (closed) throw closedError(step);
      checkFence();
    },
    /** Fails every pending sleep at once and every later one. */
    close(): void {
      closed = true;
      for (const t of timers) {
        clearTimeout(t.timer);
        t.fail();
      }
      timers.clear();
    },
  };
}
