/**
 * Whether a promise has settled yet, after everything already queued has run: the promise
 * callbacks (microtasks) first, then one turn of the event loop (setImmediate). Deterministic
 * for work that needs no I/O or timer: a test that controls the clock (mock.timers, a manual
 * clock) asks "not yet" and "now" by this instead of racing a sleep.
 */
export async function promiseState(promise: Promise<unknown>): Promise<'pending' | 'fulfilled' | 'rejected'> {
  let state: 'pending' | 'fulfilled' | 'rejected' = 'pending';
  promise.then(
    () => {
      state = 'fulfilled';
    },
    () => {
      state = 'rejected';
    },
  );
  await new Promise((r) => setImmediate(r));
  return state;
}
