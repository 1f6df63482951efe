import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createFailureThrottle } from '../../src/auth/failure-throttle.ts';

describe('failure throttle (token endpoint guessing resistance)', () => {
  test('allows the free attempts, then locks the key out', () => {
    const throttle = createFailureThrottle({ freeAttempts: 5, baseLockMs: 1000 });
    for (let i = 0; i < 4; i++) {
      throttle.fail('client:a', 1000);
      assert.equal(throttle.retryAfter('client:a', 1000), 0, `after ${i + 1} failures`);
    }
    throttle.fail('client:a', 1000);
    assert.equal(throttle.retryAfter('client:a', 1000), 1);
    // Other keys are not affected.
    assert.equal(throttle.retryAfter('client:b', 1000), 0);
  });

  test('the lock-out ends after its time', () => {
    const throttle = createFailureThrottle({ freeAttempts: 2, baseLockMs: 3000 });
    throttle.fail('k', 0);
    throttle.fail('k', 0);
    assert.equal(throttle.retryAfter('k', 0), 3);
    assert.equal(throttle.retryAfter('k', 2500), 1);
    assert.equal(throttle.retryAfter('k', 3000), 0);
  });

  test('the lock-out doubles with each further failure, up to the cap', () => {
    const throttle = createFailureThrottle({ freeAttempts: 1, baseLockMs: 1000, maxLockMs: 10_000 });
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) {
      throttle.fail('k', 0);
      waits.push(throttle.retryAfter('k', 0));
    }
    assert.deepEqual(waits, [1, 2, 4, 8, 10, 10]);
  });

  test('a success clears the key', () => {
    const throttle = createFailureThrottle({ freeAttempts: 3 });
    for (let i = 0; i < 3; i++) throttle.fail('k', 0);
    assert.ok(throttle.retryAfter('k', 0) > 0);
    throttle.succeed('k');
    assert.equal(throttle.retryAfter('k', 0), 0);
    // The count starts again: two more failures do not lock.
    throttle.fail('k', 0);
    throttle.fail('k', 0);
    assert.equal(throttle.retryAfter('k', 0), 0);
  });

  test('failures older than the window are forgotten', () => {
    const throttle = createFailureThrottle({ freeAttempts: 3, windowMs: 60_000 });
    throttle.fail('k', 0);
    throttle.fail('k', 1000);
    // The third failure comes after the window: the count restarts, no lock-out.
    throttle.fail('k', 61_001);
    assert.equal(throttle.retryAfter('k', 61_001), 0);
    throttle.fail('k', 61_002);
    assert.equal(throttle.retryAfter('k', 61_002), 0);
    throttle.fail('k', 61_003);
    assert.ok(throttle.retryAfter('k', 61_003) > 0);
  });

  test('defaults: five free attempts', () => {
    const throttle = createFailureThrottle();
    for (let i = 0; i < 4; i++) throttle.fail('k', 0);
    assert.equal(throttle.retryAfter('k', 0), 0);
    throttle.fail('k', 0);
    assert.ok(throttle.retryAfter('k', 0) >= 1);
  });

  test('remembers at most maxKeys keys, forgetting the least recently used', () => {
    const throttle = createFailureThrottle({ freeAttempts: 1, baseLockMs: 60_000, maxKeys: 3 });
    for (const k of ['a', 'b', 'c']) throttle.fail(k, 0);
    // "a" is looked up again (its address keeps knocking), so "b" is now the least recently used.
    assert.equal(throttle.retryAfter('a', 0), 60);
    throttle.fail('d', 0);
    assert.equal(throttle.retryAfter('b', 0), 0, 'the least recently used key is forgotten');
    for (const k of ['c', 'd', 'a']) assert.equal(throttle.retryAfter(k, 0), 60, `${k} is still locked`);
    // Filling the memory with new keys never frees a key that was just used.
    for (let i = 0; i < 100; i++) {
      throttle.fail(`flood-${i}`, 0);
      assert.equal(throttle.retryAfter('a', 0), 60);
    }
  });

  test('attempts in flight count: of 20 reserved at once, only the free ones are granted', () => {
    const throttle = createFailureThrottle({ freeAttempts: 5, baseLockMs: 1000 });
    const results = Array.from({ length: 20 }, () => throttle.reserve('k', 0));
    const granted = results.filter((r) => r.granted);
    assert.equal(granted.length, 5);
    for (const r of results.slice(5)) {
      assert.ok(!r.granted);
      assert.ok(r.retryAfter >= 1, 'a refusal says how long to wait');
    }
    // No lock-out yet: the attempts in flight have not failed; another key is not affected.
    assert.equal(throttle.retryAfter('k', 0), 0);
    assert.ok(throttle.reserve('other', 0).granted);
    // They all fail: the key is locked, as after five failures in a row.
    for (const r of granted) if (r.granted) r.fail(0);
    assert.equal(throttle.retryAfter('k', 0), 1);
    assert.ok(!throttle.reserve('k', 0).granted);
  });

  test('a success gives its reservation back and clears the key, a released one is given back', () => {
    const throttle = createFailureThrottle({ freeAttempts: 5 });
    const five = Array.from({ length: 5 }, () => throttle.reserve('k', 0));
    assert.ok(!throttle.reserve('k', 0).granted, 'five in flight: the sixth waits');
    const [right, ...wrong] = five;
    for (const r of wrong) if (r.granted) r.fail(0);
    assert.ok(right?.granted);
    right.succeed();
    // Settling twice changes nothing.
    right.fail(0);
    assert.equal(throttle.retryAfter('k', 0), 0);
    // The count starts again: five more attempts may be in flight.
    const again = Array.from({ length: 6 }, () => throttle.reserve('k', 0));
    assert.deepEqual(
      again.map((r) => r.granted),
      [true, true, true, true, true, false],
    );
    // One of them neither fails nor succeeds (a disabled client): its place is free again.
    const first = again[0];
    assert.ok(first?.granted);
    first.release();
    assert.ok(throttle.reserve('k', 0).granted);
    assert.ok(!throttle.reserve('k', 0).granted);
  });

  test('after a lock-out ends, one attempt at a time is let through', () => {
    const throttle = createFailureThrottle({ freeAttempts: 2, baseLockMs: 1000 });
    throttle.fail('k', 0);
    throttle.fail('k', 0);
    assert.ok(!throttle.reserve('k', 999).granted);
    const one = throttle.reserve('k', 1000);
    assert.ok(one.granted);
    const two = throttle.reserve('k', 1000);
    assert.ok(!two.granted);
    // Were the first to fail, the address would be locked for 2 s: that is the wait it is told.
    assert.equal(two.retryAfter, 2);
    one.fail(1000);
    assert.equal(throttle.retryAfter('k', 1000), 2);
  });
});
