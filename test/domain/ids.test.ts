import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { isUuid, uuidv7 } from '../../src/domain/ids.ts';

const id = (at = Date.now()) => uuidv7(at, randomBytes(16));

describe('service ids (UUID version 7)', () => {
  test('an RFC 9562 version 7 UUID, accepted wherever the API takes a UUID', () => {
    for (let i = 0; i < 1000; i++) {
      const v7 = id();
      assert.match(v7, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(isUuid(v7));
    }
  });

  test('carries its creation time in its first 48 bits', () => {
    const at = Date.UTC(2026, 10, 23, 10, 30, 0, 123);
    assert.equal(Number.parseInt(id(at).replace(/-/g, '').slice(0, 12), 16), at);
  });

  test('later ids sort after earlier ones; ids of one millisecond differ', () => {
    const t = 1_800_000_000_000;
    const early = Array.from({ length: 100 }, () => id(t));
    const late = Array.from({ length: 100 }, () => id(t + 1));
    assert.equal(new Set(early).size, 100);
    for (const a of early) for (const b of late) assert.ok(a < b);
  });

  test('no repeats in many', () => {
    // The random bytes drawn at once: a system call per id was most of this test's second.
    const random = randomBytes(16 * 100_000);
    const seen = new Set<string>();
    for (let i = 0; i < 100_000; i++) seen.add(uuidv7(Date.now(), random.subarray(i * 16, (i + 1) * 16)));
    assert.equal(seen.size, 100_000);
  });

  test('its random part is the bytes given, so the domain itself draws none', () => {
    const bytes = randomBytes(16);
    assert.equal(uuidv7(1, bytes), uuidv7(1, bytes));
    assert.notEqual(uuidv7(1, bytes), uuidv7(1, randomBytes(16)));
    assert.throws(() => uuidv7(1, randomBytes(15)), RangeError);
  });
});
