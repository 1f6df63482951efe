/**
 * Wakes this process's worker when a job is enqueued here, so it need not wait for its next
 * poll. Other processes' jobs are found by polling.
 */
export interface JobSignal {
  notify(): void;
  /** Resolves on the next notify() or after `ms`, whichever is first. */
  wait(ms: number, abort?: AbortSignal): Promise<void>;
}

export function createJobSignal(): JobSignal {
  let waiters: (() => void)[] = [];
  return {
    notify() {
      const w = waiters;
      waiters = [];
      for (const resolve of w) resolve();
    },
    wait(ms, abort) {
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          abort?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        abort?.addEventListener('abort', done, { once: true });
        waiters.push(done);
      });
    },
  };
}
