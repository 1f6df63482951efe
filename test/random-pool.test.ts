import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createSecretBox } from '../src/auth/secret-box.ts';
import { randomPoolBytes } from '../src/random-pool.ts';

describe('pooled random bytes', () => {
  test('the length asked for, small and large', () => {
    for (const n of [0, 1, 12, 64, 1024, 5000]) assert.equal(randomPoolBytes(n).length, n);
  });

  test('never the same bytes twice, across refills of the pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 100_000; i++) {
      const hex = randomPoolBytes(12).toString('hex');
      assert.ok(!seen.has(hex), 'a 12-byte draw repeated');
      seen.add(hex);
    }
  });

  test('a returned buffer is the caller’s: later draws do not change it', () => {
    const first = randomPoolBytes(16);
    const copy = Buffer.from(first);
    for (let i = 0; i < 1000; i++) randomPoolBytes(16);
    assert.deepEqual(first, copy);
  });

  test('every byte value is about equally likely', () => {
    const counts = new Array<number>(256).fill(0);
    const n = 1_000_000;
    for (let i = 0; i < n / 100; i++) for (const b of randomPoolBytes(100)) counts[b]!++;
    const mean = n / 256;
    for (const [value, c] of counts.entries()) {
      assert.ok(Math.abs(c - mean) / mean < 0.08, `byte ${value} appeared ${c} times, mean ${mean}`);
    }
  });

  test('sealed secrets get distinct IVs', () => {
    const box = createSecretBox(Buffer.alloc(32, 7));
    const ivs = new Set<string>();
    for (let i = 0; i < 20_000; i++) ivs.add(box.seal('same password').split('.')[1]!);
    assert.equal(ivs.size, 20_000);
  });
});
