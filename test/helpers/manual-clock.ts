/** A server clock that moves only when the test says so: waits become steps, never sleeps. */
import type { Clock } from '../../src/domain/clock.ts';

export interface ManualClock extends Clock {
  advance(ms: number): void;
}

export function createManualClock(start = Date.now()): ManualClock {
  let now = start;
  return {
    now: () => now,
    advance(ms) {
      now += ms;
    },
  };
}
