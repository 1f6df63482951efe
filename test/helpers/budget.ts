/**
 * How long a test waits for something to happen before it gives up: a process it started to
 * listen, a job to end, an event to arrive. One setting, VRP_TEST_WAIT (seconds, default 120),
 * generous on purpose: a busy machine is slow, and a wait that runs out fails with what it was
 * waiting for. It is a budget against hanging, not a measure: no test passes or fails on how
 * fast something happened (speed is measured by bench/).
 */
const DEFAULT_S = 120;

function budgetMs(): number {
  const setting = process.env['VRP_TEST_WAIT'];
  if (setting === undefined || setting === '') return DEFAULT_S * 1000;
  if (!/^[1-9]\d*$/.test(setting)) {
    throw new Error(`VRP_TEST_WAIT must be a whole number of seconds (got ${JSON.stringify(setting)})`);
  }
  return Number(setting) * 1000;
}

export const WAIT_MS = budgetMs();

/**
 * The budget for a wait that is slow by nature on any machine (a real VM booting): `typicalMs`
 * is what it needs with the default setting; it scales with VRP_TEST_WAIT and is never less
 * than WAIT_MS.
 */
export function slowWaitMs(typicalMs: number): number {
  return Math.max(WAIT_MS, Math.round((typicalMs * WAIT_MS) / (DEFAULT_S * 1000)));
}

// The real timer and clock, taken before any test can mock them (mock.timers): a test that
// steps a mocked setTimeout still polls, and gives up, in real time.
const realSetTimeout = globalThis.setTimeout;
const realNow = performance.now.bind(performance);

/** Resolves after `ms` of real time, whatever a test mocked (for polls between checks). */
export function pause(ms: number): Promise<void> {
  return new Promise((r) => realSetTimeout(r, ms));
}

/**
 * Polls `check` until it returns something other than `undefined` (or `false`), or fails after
 * the budget (`budgetMs`, WAIT_MS unless given) naming `what`. Between polls it waits `everyMs`
 * of real time.
 */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: { everyMs?: number; budgetMs?: number } = {},
): Promise<T> {
  const budget = options.budgetMs ?? WAIT_MS;
  const until = realNow() + budget;
  for (;;) {
    const found = await check();
    if (found !== undefined && found !== false) return found;
    if (realNow() > until) {
      const setting = budget === WAIT_MS ? ' (VRP_TEST_WAIT)' : '';
      throw new Error(`gave up after ${budget / 1000} s${setting} waiting for ${what}`);
    }
    await pause(options.everyMs ?? 20);
  }
}
