import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createJobSignal } from '../../src/loop/signal.ts';
import { promiseState } from '../helpers/promise-state.ts';

// setTimeout is mocked in each test: a wait's own timeout fires only when the test ticks past
// it, so a wait that ended without a tick was ended by the notify or the abort, whatever the
// machine's speed.
describe('job signal', () => {
  test('a waiter wakes on notify, without its timeout', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const signal = createJobSignal();
    const woken = signal.wait(10_000);
    assert.equal(await promiseState(woken), 'pending', 'waits until notified');
    signal.notify();
    assert.equal(await promiseState(woken), 'fulfilled');
  });

  test('a notify while nobody waits is kept for the next wait, once', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const signal = createJobSignal();
    signal.notify();
    signal.notify();
    assert.equal(
      await promiseState(signal.wait(10_000)),
      'fulfilled',
      'the kept notify ends the wait at once',
    );
    const second = signal.wait(200);
    assert.equal(await promiseState(second), 'pending', 'only one notify is kept');
    t.mock.timers.tick(199);
    assert.equal(await promiseState(second), 'pending', 'only one notify is kept');
    t.mock.timers.tick(1);
    assert.equal(await promiseState(second), 'fulfilled', 'the wait ends at its timeout');
  });

  test('abort ends a wait', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const signal = createJobSignal();
    const abort = new AbortController();
    const waiting = signal.wait(10_000, abort.signal);
    assert.equal(await promiseState(waiting), 'pending');
    abort.abort();
    assert.equal(await promiseState(waiting), 'fulfilled');
  });

  test('a wait with an abort that came before it ends at once (a loop stopped while it claimed)', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const signal = createJobSignal();
    const abort = new AbortController();
    abort.abort();
    assert.equal(await promiseState(signal.wait(10_000, abort.signal)), 'fulfilled');
  });
});
