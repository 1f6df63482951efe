/**
 * How long each step of the simulated hypervisor takes at VRP_SIMULATED_SPEED=1, in ms:
 * close to what a KVM host with local SSD storage shows for a small cloud image.
 */
export const STEP_MS = {
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
} as const;

export type Step = keyof typeof STEP_MS;

/** Sleeps for a step scaled by `speed`; speed 0 sets no timer at all. */
export function createSleeper(speed: number) {
  const timers = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  return {
    async sleep(step: Step, extraMs = 0): Promise<void> {
      const ms = (STEP_MS[step] + extraMs) * speed;
      if (ms <= 0) return;
      await new Promise<void>((resolve) => {
        const entry = { timer: setTimeout(() => done(), ms), resolve };
        const done = () => {
          timers.delete(entry);
          resolve();
        };
        timers.add(entry);
      });
    },
    /** Ends every pending sleep at once (driver close). */
    cancelAll(): void {
      for (const t of timers) {
        clearTimeout(t.timer);
        t.resolve();
      }
      timers.clear();
    },
  };
}
