/** The server's notion of "now", in epoch milliseconds. Tests may start it elsewhere or run it faster. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * A clock that starts at `start` and runs `rate` times faster than real time:
 * how tests and demos make backup schedule slots come due quickly.
 */
export function createClock(start: number | undefined, rate: number): Clock {
  if (start === undefined && rate === 1) return systemClock;
  const realStart = Date.now();
  const virtualStart = start ?? realStart;
  return { now: () => Math.floor(virtualStart + (Date.now() - realStart) * rate) };
}
