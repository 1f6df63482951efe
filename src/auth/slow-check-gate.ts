/**
 * Why an attempt at a secret or password was refused before its slow check: its key (the source
 * address) is locked out or has as many checks waiting as it may (429), or the whole process has
 * (503). The token endpoint and the console login catch it and answer with `retryAfter`.
 */
export class AttemptRefused extends Error {
  override name = 'AttemptRefused';
  readonly reason: 'locked_out' | 'address_busy' | 'server_busy';
  /** Seconds to wait before trying again. */
  readonly retryAfter: number;

  constructor(reason: AttemptRefused['reason'], retryAfter: number) {
    super(reason);
    this.reason = reason;
    this.retryAfter = retryAfter;
  }

  get status(): 429 | 503 {
    return this.reason === 'server_busy' ? 503 : 429;
  }
}

/**
 * Bounds the slow hashes (scrypt, 32-128 MiB each) that run at once: at most `total` in the
 * process and `perKey` for one key (source address). A check beyond that waits its turn, in
 * order, unless `perKeyQueue` checks of its key or `queue` checks in all are already waiting:
 * then it is refused at once (AttemptRefused), so that neither memory nor waiting grows with a
 * burst.
 */
export interface SlowCheckGate {
  /** Runs `check` once a place is free; throws AttemptRefused when it may not wait for one. */
  run<T>(key: string, check: () => Promise<T>): Promise<T>;
  /** Checks running now. */
  readonly running: number;
  /** Checks waiting for a place now. */
  readonly waiting: number;
}

export interface SlowCheckGateOptions {
  readonly total: number;
  readonly perKey: number;
  readonly queue: number;
  readonly perKeyQueue: number;
}

/** What a full queue answers: a place frees up within a hash or two. */
const BUSY_RETRY_AFTER = 1;

export function createSlowCheckGate(options: SlowCheckGateOptions): SlowCheckGate {
  for (const [name, value] of Object.entries(options)) {
    if (!Number.isInteger(value) || value < (name.endsWith('ueue') ? 0 : 1)) {
      throw new RangeError(`${name} must be a whole number, at least ${name.endsWith('ueue') ? 0 : 1}`);
    }
  }
  const runningByKey = new Map<string, number>();
  const waitingByKey = new Map<string, number>();
  const waiters: { key: string; start: () => void }[] = [];
  let running = 0;

  const add = (m: Map<string, number>, key: string, n: number) => {
    const v = (m.get(key) ?? 0) + n;
    if (v === 0) m.delete(key);
    else m.set(key, v);
  };
  const canStart = (key: string) => running < options.total && (runningByKey.get(key) ?? 0) < options.perKey;
  const begin = (key: string) => {
    running += 1;
    add(runningByKey, key, 1);
  };
  // Starts every waiter that may start now, oldest first; after it no waiter can start, so a new
  // check that can start at once jumps no queue.
  const pump = () => {
    for (let i = 0; i < waiters.length && running < options.total; ) {
      const w = waiters[i];
      if (w === undefined) break;
      if (!canStart(w.key)) {
        i += 1;
        continue;
      }
      waiters.splice(i, 1);
      add(waitingByKey, w.key, -1);
      begin(w.key);
      w.start();
    }
  };

  return {
    async run(key, check) {
      if (canStart(key)) {
        begin(key);
      } else {
        if ((waitingByKey.get(key) ?? 0) >= options.perKeyQueue) {
          throw new AttemptRefused('address_busy', BUSY_RETRY_AFTER);
        }
        if (waiters.length >= options.queue) throw new AttemptRefused('server_busy', BUSY_RETRY_AFTER);
        add(waitingByKey, key, 1);
        await new Promise<void>((start) => waiters.push({ key, start }));
      }
      try {
        return await check();
      } finally {
        running -= 1;
        add(runningByKey, key, -1);
        pump();
      }
    },
    get running() {
      return running;
    },
    get waiting() {
      return waiters.length;
    },
  };
}
