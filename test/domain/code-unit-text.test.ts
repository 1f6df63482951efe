import assert from 'node:assert/strict';
import { test } from 'node:test';
import { byCodeUnits, groupThousands } from '../../src/domain/code-unit-text.ts';

test('groupThousands writes a whole number as English does, commas between thousands', () => {
  const cases: [number, string][] = [
    [0, '0'],
    [7, '7'],
    [999, '999'],
    [1000, '1,000'],
    [10_000, '10,000'],
    [100_000, '100,000'],
    [1_234_567, '1,234,567'],
    [-1234, '-1,234'],
    [Number.MAX_SAFE_INTEGER, '9,007,199,254,740,991'],
  ];
  for (const [n, text] of cases) assert.equal(groupThousands(n), text, String(n));
  // The same text as the locale's formatting, which this test process may load.
  for (let n = 1; n < 1e15; n = n * 7 + 3) assert.equal(groupThousands(n), n.toLocaleString('en'), String(n));
});

test('groupThousands refuses what is no whole number', () => {
  for (const n of [1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60])
    assert.throws(() => groupThousands(n), RangeError, String(n));
});

test('byCodeUnits orders by UTF-16 code units: capitals before small letters, digits one by one', () => {
  const names = ['node-b', 'Node-a', 'node-10', 'node-9', 'node_a', 'node-A', 'é', 'z'];
  assert.deepEqual([...names].sort(byCodeUnits), [
    'Node-a',
    'node-10',
    'node-9',
    'node-A',
    'node-b',
    'node_a',
    'z',
    'é',
  ]);
  assert.equal(byCodeUnits('a', 'a'), 0);
  assert.equal(byCodeUnits('a', 'b'), -1);
  assert.equal(byCodeUnits('b', 'a'), 1);
});
