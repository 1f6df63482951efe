/**
 * `setTimeout` mocked for one test (Node's mock timers), with the timers set for real before it
 * still cleared for real.
 *
 * Node's mocked `clearTimeout` ignores a timer it did not make. A PostgreSQL store's pool sets a
 * real timer for each idle connection (its close after PG_IDLE_CLOSE_MS, a minute) and clears it
 * when the connection is taken again: taken while the mock is on, the real timer stayed, and
 * kept the test process alive for that minute after everything else had ended (a test lane
 * names it, PipeWrap and Timeout, and fails). Here a real timer goes to the real `clearTimeout`;
 * `reset()` (or the test's end) puts both functions back as they were.
 */
import type { TestContext } from 'node:test';

/** The class of a real timer (Node's mocked timers are of another). */
const RealTimeout = (() => {
  const probe = setTimeout(() => {}, 0);
  clearTimeout(probe);
  return probe.constructor;
})();

export function mockSetTimeout(t: TestContext, options: { readonly dateFrom?: number } = {}): void {
  const realClear = globalThis.clearTimeout;
  // With `dateFrom`, `Date` is mocked too, starting there, and moves with the same ticks.
  if (options.dateFrom === undefined) t.mock.timers.enable({ apis: ['setTimeout'] });
  else t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: options.dateFrom });
  const mockedClear = globalThis.clearTimeout;
  globalThis.clearTimeout = ((timer?: Parameters<typeof clearTimeout>[0]) =>
    timer instanceof RealTimeout ? realClear(timer) : mockedClear(timer)) as typeof clearTimeout;
}
