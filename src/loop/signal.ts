/**
 * Wakes this process's worker when a job is enqueued here, so it need not wait for its next
 * poll. Other processes' jobs are found by polling. A notify() while nobody waits is kept
 * (once), so work that arrives while the worker is busy claiming is not left for the poll.
 */
export interface JobSignal {
  notify(): void;
  /**
   * Resolves on the next notify() (or at once if one came since the last wait), after `ms`, or
   * when `abort` aborts (at once if it has).
   */
  wait(ms: number, abort?: AbortSignal): Promise<void>;
}

export function createJobSignal(): JobSignal {
  let waiters: (() => void)[] = [];
  let missed = false;
  return {
    notify() {
      if (waiters.length === 0) {
        missed = true;
        return;
      }
      const w = waiters;
      waiters = [];
      for (const resolve of w) resolve();
    },
    wait(ms, abort) {
      // An abort that came while the loop was busy (claiming) ends the wait at once: a listener
      // added to an aborted signal never runs, and stop() would wait out the whole poll.
      if (abort?.aborted) return Promise.resolve();
      if (missed) {
        missed = false;
        return Promise.resolve();
      }
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
