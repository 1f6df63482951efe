import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createJobSignal } from '../../src/loop/signal.ts';

describe('job signal', () => {
  test('a waiter wakes on notify, well before its timeout', async () => {
    const signal = createJobSignal();
    const t0 = performance.now();
    const woken = signal.wait(10_000);
    setTimeout(() => signal.notify(), 10);
    await woken;
    assert.ok(performance.now() - t0 < 5000);
  });

  test('a notify while nobody waits is kept for the next wait, once', async () => {
    const signal = createJobSignal();
    signal.notify();
    signal.notify();
    const t0 = performance.now();
    await signal.wait(10_000);
    assert.ok(performance.now() - t0 < 1000, 'the kept notify should end the wait at once');
    const t1 = performance.now();
    await signal.wait(200);
    assert.ok(performance.now() - t1 >= 150, 'only one notify is kept');
  });

  test('abort ends a wait', async () => {
    const signal = createJobSignal();
    const abort = new AbortController();
    const t0 = performance.now();
    const waiting = signal.wait(10_000, abort.signal);
    abort.abort();
    await waiting;
    assert.ok(performance.now() - t0 < 5000);
  });

  test('a wait with an abort that came before it ends at once (a loop stopped while it claimed)', async () => {
    const signal = createJobSignal();
    const abort = new AbortController();
    abort.abort();
    const t0 = performance.now();
    await signal.wait(10_000, abort.signal);
    assert.ok(performance.now() - t0 < 1000);
  });
});
