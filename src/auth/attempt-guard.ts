import type { FailureThrottle, ThrottleReservation } from './failure-throttle.ts';
import { AttemptRefused, type SlowCheckGate } from './slow-check-gate.ts';

/** Runs a slow check (a secret's or a password's hash) on behalf of whoever asked for it. */
export type SlowCheck = <T>(check: () => Promise<T>) => Promise<T>;

/** A slow check run at once, unguarded (the CLI, tests of the hashing alone). */
export const unguarded: SlowCheck = (check) => check();

/** One attempt at a secret or password from `key`, guarded by a throttle and a gate. */
export interface GuardedAttempt {
  /**
   * For the authenticator: waits for the gate's place, then reserves the attempt with the
   * throttle (AttemptRefused if it is refused), then runs the check. At most once per attempt.
   */
  readonly slowCheck: SlowCheck;
  /** The secret was wrong: the attempt counts as a failure. */
  fail(nowMs: number): void;
  /** The secret was right: the reservation is given back and the key's failures cleared. */
  succeed(): void;
  /** Neither (a disabled client, an error): the reservation, if any, is given back. */
  release(): void;
}

/**
 * The throttle's reservation is taken inside the gate, just before the hash, so that a check
 * that waited sees the failures of those ahead of it; and before the hash, so that checks running
 * at once cannot all pass a lock-out none of them has set yet.
 */
export function guardAttempt(
  throttle: FailureThrottle,
  gate: SlowCheckGate,
  key: string,
  now: () => number,
): GuardedAttempt {
  let reservation: Extract<ThrottleReservation, { granted: true }> | undefined;
  return {
    slowCheck: (check) =>
      gate.run(key, async () => {
        if (reservation) throw new Error('one slow check per attempt');
        const r = throttle.reserve(key, now());
        if (!r.granted) throw new AttemptRefused('locked_out', r.retryAfter);
        reservation = r;
        return check();
      }),
    fail(nowMs) {
      if (reservation) reservation.fail(nowMs);
      else throttle.fail(key, nowMs);
    },
    succeed() {
      if (reservation) reservation.succeed();
      else throttle.succeed(key);
    },
    release() {
      reservation?.release();
    },
  };
}
