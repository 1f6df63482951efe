import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createRateLimiter } from '../../src/http/rate-limit.ts';

describe('rate limiter (token bucket per application)', () => {
  test('lets a burst through, then refuses with the time to wait', () => {
    const limiter = createRateLimiter(2, 3);
    assert.equal(limiter.take('a', 0), 0);
    assert.equal(limiter.take('a', 0), 0);
    assert.equal(limiter.take('a', 0), 0);
    const wait = limiter.take('a', 0);
    assert.equal(wait, 500, 'one token at 2 per second takes 500 ms');
    // Refusals do not consume anything: the wait does not grow.
    assert.equal(limiter.take('a', 0), 500);
  });

  test('refills at the steady rate, never above the burst', () => {
    const limiter = createRateLimiter(2, 2);
    limiter.take('a', 0);
    limiter.take('a', 0);
    assert.ok(limiter.take('a', 0) > 0);
    assert.equal(limiter.take('a', 250), 250, 'half a token after 250 ms: 250 ms more');
    assert.equal(limiter.take('a', 500), 0, 'one token after 500 ms');
    assert.ok(limiter.take('a', 500) > 0);
    // A long pause refills up to the burst only.
    assert.equal(limiter.take('a', 60_000), 0);
    assert.equal(limiter.take('a', 60_000), 0);
    assert.ok(limiter.take('a', 60_000) > 0);
  });

  test('keys have their own buckets', () => {
    const limiter = createRateLimiter(1, 1);
    assert.equal(limiter.take('a', 0), 0);
    assert.ok(limiter.take('a', 0) > 0);
    assert.equal(limiter.take('b', 0), 0);
  });

  test('rate 0 turns limiting off', () => {
    const limiter = createRateLimiter(0, 1);
    for (let i = 0; i < 1000; i++) assert.equal(limiter.take('a', 0), 0);
  });
});
