import { setImmediate } from 'node:timers/promises';
import type { JobSignal } from './signal.ts';

export interface PollLoopOptions {
  /**
   * One look at the queue: claims what it can for the free slots and hands each piece of work to
   * the loop's `track`. Resolves true when there may be more to claim at once (it filled what it asked for).
   */
  readonly tick: () => Promise<boolean>;
  /** Wakes the loop before its poll is up (work was queued, or a slot came free). */
  readonly signal: JobSignal;
  /** Longest wait between looks when nothing wakes the loop. */
  readonly pollMs: number;
  /** Pieces of work under way at once. */
  readonly concurrency: number;
  /** A tick that threw (the store is down...): logged here; the loop backs off, 100 ms to 5 s. */
  readonly onError: (err: unknown) => void;
}

export interface StopOptions {
  /** How long the work under way may take to finish before it is aborted. */
  readonly graceMs: number;
  /** Why the work is aborted (its AbortSignal's reason). */
  readonly reason?: unknown;
  /** Told how many pieces are still under way when the grace period is over, before they are aborted. */
  readonly onGraceOver?: (running: number) => void;
  /** How long to wait for aborted work to end (default: until it has). */
  readonly abortWaitMs?: number;
}

/**
 * The lifecycle the job worker and the webhook sender share: start a loop that looks at a queue,
 * wake it early, and stop it: no more looks, then the work under way gets a grace period to
 * finish, then its AbortSignal fires and the loop waits for it to end.
 */
export interface PollLoop<K> {
  start(): void;
  /** Looks at the queue now rather than at the end of the poll. */
  wake(): void;
  /** Runs `work` as the piece `key`: it counts against `concurrency` until it settles. */
  track(key: K, work: Promise<void>): void;
  /** The work under way, by key. */
  readonly running: ReadonlyMap<K, Promise<void>>;
  /** Aborted when a stop's grace period is over: work still under way gives up. */
  readonly workSignal: AbortSignal;
  stop(options: StopOptions): Promise<void>;
}

export function createPollLoop<K>(o: PollLoopOptions): PollLoop<K> {
  const running = new Map<K, Promise<void>>();
  /** Work whose key was tracked again while it went on: still waited for by a stop. */
  const superseded = new Set<Promise<void>>();
  let loopAbort = new AbortController();
  let workAbort = new AbortController();
  let loop: Promise<void> | undefined;

  async function run() {
    let backoff = 0;
    while (!loopAbort.signal.aborted) {
      try {
        const more = await o.tick();
        backoff = 0;
        // There may be more, and slots are free: look again at once. Otherwise sleep until woken.
        if (more && running.size < o.concurrency) continue;
        await o.signal.wait(o.pollMs, loopAbort.signal);
        // Let the rest of this turn's wake-ups (requests, finished work) in first: one look for
        // all of them rather than one each.
        await setImmediate();
      } catch (err) {
        backoff = Math.min(5000, backoff ? backoff * 2 : 100);
        o.onError(err);
        await o.signal.wait(backoff, loopAbort.signal);
      }
    }
  }

  const self: PollLoop<K> = {
    running,
    get workSignal() {
      return workAbort.signal;
    },
    start() {
      if (loop) return;
      loopAbort = new AbortController();
      workAbort = new AbortController();
      loop = run();
    },
    wake() {
      o.signal.notify();
    },
    track(key, work) {
      // Tracked again while its first work goes on (a job its worker claimed again): that work
      // counts no more against the slots, but a stop still waits for it.
      const earlier = running.get(key);
      if (earlier) {
        superseded.add(earlier);
        const forget = () => superseded.delete(earlier);
        earlier.then(forget, forget);
      }
      const p = work.finally(() => {
        // Only its own entry: the key may have been tracked again since, and that work is still under way.
        if (running.get(key) === p) running.delete(key);
        o.signal.notify();
      });
      running.set(key, p);
    },
    async stop({ graceMs, reason, onGraceOver, abortWaitMs }) {
      loopAbort.abort();
      await loop;
      loop = undefined;
      const all = () => [...running.values(), ...superseded];
      if (await settledWithin(all(), graceMs)) return;
      onGraceOver?.(running.size + superseded.size);
      workAbort.abort(reason);
      if (abortWaitMs === undefined) await Promise.allSettled(all());
      else await settledWithin(all(), abortWaitMs);
    },
  };
  return self;
}

/** Whether every promise settled within `ms`. */
async function settledWithin(promises: Iterable<Promise<unknown>>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const all = Promise.allSettled([...promises]).then(() => true);
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([all, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
