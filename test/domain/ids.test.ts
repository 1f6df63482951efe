import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { uuidv7 } from '../../src/domain/ids.ts';
import { isUuid } from '../../src/http/schemas.ts';

describe('service ids (UUID version 7)', () => {
  test('an RFC 9562 version 7 UUID, accepted wherever the API takes a UUID', () => {
    for (let i = 0; i < 1000; i++) {
      const id = uuidv7();
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(isUuid(id));
    }
  });

  test('carries its creation time in its first 48 bits', () => {
    const at = Date.UTC(2026, 10, 23, 10, 30, 0, 123);
    const id = uuidv7(at);
    assert.equal(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16), at);
  });

  test('later ids sort after earlier ones; ids of one millisecond differ', () => {
    const t = 1_800_000_000_000;
    const early = Array.from({ length: 100 }, () => uuidv7(t));
    const late = Array.from({ length: 100 }, () => uuidv7(t + 1));
    assert.equal(new Set(early).size, 100);
    for (const a of early) for (const b of late) assert.ok(a < b);
  });

  test('no repeats in many', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 100_000; i++) seen.add(uuidv7());
    assert.equal(seen.size, 100_000);
  });
});
