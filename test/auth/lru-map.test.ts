import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LruMap } from '../../src/auth/lru-map.ts';

describe('LRU map', () => {
  test('never holds more than its capacity', () => {
    const lru = new LruMap<number, number>(10);
    for (let i = 0; i < 1000; i++) {
      lru.set(i, i);
      assert.ok(lru.size <= 10);
    }
    assert.equal(lru.size, 10);
    // The ten most recent are the ones kept.
    for (let i = 990; i < 1000; i++) assert.equal(lru.get(i), i);
    assert.equal(lru.get(989), undefined);
  });

  test('a get or a set makes an entry the most recently used', () => {
    const lru = new LruMap<string, number>(2);
    lru.set('a', 1);
    lru.set('b', 2);
    assert.equal(lru.get('a'), 1);
    lru.set('c', 3);
    assert.equal(lru.get('b'), undefined, 'b was the least recently used');
    lru.set('a', 10);
    lru.set('d', 4);
    assert.equal(lru.get('c'), undefined);
    assert.equal(lru.get('a'), 10);
  });

  test('delete frees room; a capacity below 1 is refused', () => {
    const lru = new LruMap<string, number>(1);
    lru.set('a', 1);
    assert.equal(lru.delete('a'), true);
    assert.equal(lru.size, 0);
    assert.throws(() => new LruMap(0), RangeError);
  });
});
