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
 * Polls `check` until it returns something other than `undefined`, or fails after the budget
 * naming `what`. Between polls it yields to timers for `everyMs`.
 */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  everyMs = 20,
): Promise<T> {
  const until = Date.now() + WAIT_MS;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() > until)
      throw new Error(`gave up after ${WAIT_MS / 1000} s (VRP_TEST_WAIT) waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
