import { LruMap } from './lru-map.ts';

/**
 * Slows down guessing at the token endpoint and the console login: after `freeAttempts`
 * failures for one key (the source address) within `windowMs`, further attempts are refused
 * until a lock-out that doubles with each failure (capped). A success clears the key.
 * At most `maxKeys` keys are remembered; beyond that the least recently used is forgotten.
 * Kept per process: with N processes an attacker gets at most N times the budget.
 *
 * A check takes a while (a slow hash), so attempts are reserved before it: an attempt in flight
 * counts as the failure it may turn out to be, and attempts sent at the same moment cannot all
 * pass a check that none of them has failed yet.
 */
export interface FailureThrottle {
  /** Seconds to wait if `key` is locked out now, else 0. Attempts in flight are not counted. */
  retryAfter(key: string, nowMs: number): number;
  /**
   * Reserves one attempt for `key`, refused (with the seconds to wait) when the key is locked out,
   * or would be if the attempts already in flight all failed. Settle a granted one exactly once.
   */
  reserve(key: string, nowMs: number): ThrottleReservation;
  /** A failure without a reservation (as a reservation's `fail`). */
  fail(key: string, nowMs: number): void;
  /** A success without a reservation: clears the key's failures and lock-out. */
  succeed(key: string): void;
}

export type ThrottleReservation =
  | {
      readonly granted: true;
      /** The attempt failed: it counts, and may lock the key out. */
      fail(nowMs: number): void;
      /** The attempt succeeded: the key's failures and lock-out are cleared. */
      succeed(): void;
      /** The attempt neither failed nor succeeded (a disabled client, an error): it is given back. */
      release(): void;
    }
  | { readonly granted: false; readonly retryAfter: number };

export interface FailureThrottleOptions {
  readonly freeAttempts?: number;
  readonly windowMs?: number;
  readonly baseLockMs?: number;
  readonly maxLockMs?: number;
  readonly maxKeys?: number;
}

interface KeyState {
  failures: number;
  first: number;
  lockedUntil: number;
  /** Reserved attempts not settled yet. */
  pending: number;
}

export function createFailureThrottle(options: FailureThrottleOptions = {}): FailureThrottle {
  const free = options.freeAttempts ?? 5;
  const windowMs = options.windowMs ?? 15 * 60_000;
  const baseLockMs = options.baseLockMs ?? 1000;
  const maxLockMs = options.maxLockMs ?? 15 * 60_000;
  const state = new LruMap<string, KeyState>(options.maxKeys ?? 100_000);

  /** How long `failures` failures in a row lock a key out (0 below the free attempts). */
  const lockMs = (failures: number) =>
    failures < free ? 0 : Math.min(maxLockMs, baseLockMs * 2 ** (failures - free));
  /** The failures that still count at `nowMs`: those of the current window. */
  const counted = (s: KeyState, nowMs: number) => (nowMs - s.first > windowMs ? 0 : s.failures);

  function fail(key: string, nowMs: number): void {
    let s = state.get(key);
    if (!s) {
      s = { failures: 0, first: nowMs, lockedUntil: 0, pending: 0 };
      state.set(key, s);
    }
    if (nowMs - s.first > windowMs) {
      s.failures = 0;
      s.first = nowMs;
    }
    s.failures += 1;
    if (s.failures >= free) s.lockedUntil = nowMs + lockMs(s.failures);
  }

  function succeed(key: string): void {
    const s = state.get(key);
    if (!s) return;
    // Attempts still in flight keep their reservations, so the key is kept while they last.
    if (s.pending > 0) {
      s.failures = 0;
      s.lockedUntil = 0;
    } else {
      state.delete(key);
    }
  }

  return {
    retryAfter(key, nowMs) {
      // A look-up is a use: an address that keeps knocking while locked stays remembered.
      const s = state.get(key);
      if (!s || s.lockedUntil <= nowMs) return 0;
      return Math.ceil((s.lockedUntil - nowMs) / 1000);
    },
    reserve(key, nowMs) {
      let s = state.get(key);
      if (!s) {
        s = { failures: 0, first: nowMs, lockedUntil: 0, pending: 0 };
        state.set(key, s);
      }
      if (s.lockedUntil > nowMs)
        return { granted: false, retryAfter: Math.ceil((s.lockedUntil - nowMs) / 1000) };
      // Were the attempts in flight all to fail, would this one come after the lock-out they set?
      // One attempt at a time is always let through, as after a lock-out has ended.
      const ifAllFail = counted(s, nowMs) + s.pending;
      if (s.pending > 0 && ifAllFail >= free) {
        return { granted: false, retryAfter: Math.max(1, Math.ceil(lockMs(ifAllFail) / 1000)) };
      }
      s.pending += 1;
      // The state this reservation counts in; the key may have been forgotten (and made anew)
      // before it settles, and then its count went with the forgotten state.
      const held = s;
      let settled = false;
      const settle = () => {
        if (settled) return false;
        settled = true;
        held.pending -= 1;
        return true;
      };
      return {
        granted: true,
        fail(at) {
          if (settle()) fail(key, at);
        },
        succeed() {
          if (settle()) succeed(key);
        },
        release() {
          settle();
        },
      };
    },
    fail,
    succeed,
  };
}
