import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { mergeTimes, readCosts, runOrder, writeCosts } from '../../scripts/test-costs.ts';

describe("the test files ordered by the last run's costs (scripts/test-costs.ts)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-test-costs-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('unknown files first; then waiting and busy files alternating, each kind longest first', () => {
    const files = ['a', 'b', 'c', 'new-1', 'd', 'e', 'f', 'new-0'];
    const costs = {
      a: { wall: 0.5, cpu: 0.5 }, // busy
      b: { wall: 9, cpu: 2 }, // waiting
      c: { wall: 0.5, cpu: 0.4 }, // busy, as long as a: by name
      d: { wall: 3, cpu: 3.5 }, // busy (its processes too)
      e: { wall: 4, cpu: 1 }, // waiting
      f: { wall: 6, cpu: 5 }, // busy
      gone: { wall: 60, cpu: 1 },
    };
    assert.deepEqual(runOrder(files, costs), ['new-1', 'new-0', 'b', 'f', 'e', 'd', 'a', 'c']);
    assert.deepEqual(runOrder(files, {}), files, 'without a record, the order given');
  });

  test("a run's times replace the earlier costs of the files it ran and keep the others", () => {
    const times = [
      '   8.81    1.44    3.00  test/console/services.test.ts',
      '   0.05    0.02    0.00  test/auth/client state.test.ts',
      '   1.00    0.50   -0.20  test/left-the-tree.test.ts',
      'not a line of times',
      '',
    ].join('\n');
    const earlier = {
      'test/console/services.test.ts': { wall: 13.3, cpu: 2 },
      'test/x.test.ts': { wall: 1, cpu: 1 },
    };
    assert.deepEqual(mergeTimes(earlier, times), {
      'test/console/services.test.ts': { wall: 8.81, cpu: 4.44 },
      'test/auth/client state.test.ts': { wall: 0.05, cpu: 0.02 },
      'test/left-the-tree.test.ts': { wall: 1, cpu: 0.5 },
      'test/x.test.ts': { wall: 1, cpu: 1 },
    });
  });

  test('the record is written and read back; a missing or damaged one is no record, not a failed run', () => {
    const path = join(dir, 'sub', 'times.json');
    assert.deepEqual(readCosts(path), {});
    writeCosts(path, { b: { wall: 2, cpu: 1 }, a: { wall: 1, cpu: 0.5 } });
    assert.deepEqual(readCosts(path), { a: { wall: 1, cpu: 0.5 }, b: { wall: 2, cpu: 1 } });
    assert.match(readFileSync(path, 'utf8'), /^\{\n {2}"a": \{/);
    writeFileSync(path, '{"a": {"wall": 1, "cpu');
    assert.deepEqual(readCosts(path), {});
    writeFileSync(path, '[1, 2]');
    assert.deepEqual(readCosts(path), {});
    writeFileSync(
      path,
      '{"a": 3, "b": {"wall": -1, "cpu": 1}, "c": {"wall": "x", "cpu": 1}, "d": {"wall": 4, "cpu": 0}}',
    );
    assert.deepEqual(readCosts(path), { d: { wall: 4, cpu: 0 } });
  });
});
