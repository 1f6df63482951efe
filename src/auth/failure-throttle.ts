import { LruMap } from './lru-map.ts';

/**
 * Slows down guessing at the token endpoint: after `freeAttempts` failures for one key
 * (the token endpoint uses the source address) within `windowMs`, further attempts are
 * refused until a lock-out that doubles with each failure (capped). A success clears the key.
 * At most `maxKeys` keys are remembered; beyond that the least recently used is forgotten.
 * Kept per process: with N processes an attacker gets at most N times the budget.
 */
export interface FailureThrottle {
  /** Seconds to wait if `key` is locked out now, else 0. */
  retryAfter(key: string, nowMs: number): number;
  fail(key: string, nowMs: number): void;
  succeed(key: string): void;
}

export interface FailureThrottleOptions {
  readonly freeAttempts?: number;
  readonly windowMs?: number;
  readonly baseLockMs?: number;
  readonly maxLockMs?: number;
  readonly maxKeys?: number;
}

export function createFailureThrottle(options: FailureThrottleOptions = {}): FailureThrottle {
  const free = options.freeAttempts ?? 5;
  const windowMs = options.windowMs ?? 15 * 60_000;
  const baseLockMs = options.baseLockMs ?? 1000;
  const maxLockMs = options.maxLockMs ?? 15 * 60_000;
  const state = new LruMap<string, { failures: number; first: number; lockedUntil: number }>(
    options.maxKeys ?? 100_000,
  );
  return {
    retryAfter(key, nowMs) {
      // A look-up is a use: an address that keeps knocking while locked stays remembered.
      const s = state.get(key);
      if (!s || s.lockedUntil <= nowMs) return 0;
      return Math.ceil((s.lockedUntil - nowMs) / 1000);
    },
    fail(key, nowMs) {
      let s = state.get(key);
      if (!s || nowMs - s.first > windowMs) {
        s = { failures: 0, first: nowMs, lockedUntil: 0 };
        state.set(key, s);
      }
      s.failures += 1;
      if (s.failures >= free) {
        s.lockedUntil = nowMs + Math.min(maxLockMs, baseLockMs * 2 ** (s.failures - free));
      }
    },
    succeed(key) {
      state.delete(key);
    },
  };
}
