import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { longestFirst, mergeTimes, readDurations, writeDurations } from '../../scripts/test-durations.ts';

describe('the test files ordered by the last run: slowest first (scripts/test-durations.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-durations-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('files the record does not know first, in their own order; then the known, longest first', () => {
    const files = ['a.test.ts', 'b.test.ts', 'c.test.ts', 'new-1.test.ts', 'd.test.ts', 'new-0.test.ts'];
    const durations = {
      'a.test.ts': 0.5,
      'b.test.ts': 9,
      'c.test.ts': 0.5,
      'd.test.ts': 3,
      'gone.test.ts': 60,
    };
    assert.deepEqual(longestFirst(files, durations), [
      'new-1.test.ts',
      'new-0.test.ts',
      'b.test.ts',
      'd.test.ts',
      'a.test.ts',
      'c.test.ts',
    ]);
    assert.deepEqual(longestFirst(files, {}), files, 'without a record, the order given');
  });

  test("a run's times replace the earlier ones of the files it ran and keep the others", () => {
    const times = [
      '   8.81    1.44    0.00  test/console/services.test.ts',
      '   0.05    0.02    0.00  test/auth/client state.test.ts',
      'not a line of times',
      '',
    ].join('\n');
    assert.deepEqual(mergeTimes({ 'test/console/services.test.ts': 13.3, 'test/x.test.ts': 1 }, times), {
      'test/console/services.test.ts': 8.81,
      'test/auth/client state.test.ts': 0.05,
      'test/x.test.ts': 1,
    });
  });

  test('the record is written and read back; a missing or damaged one is no record, not a failed run', () => {
    const path = join(dir, 'sub', 'durations.json');
    assert.deepEqual(readDurations(path), {});
    writeDurations(path, { 'b.test.ts': 2, 'a.test.ts': 1 });
    assert.deepEqual(readDurations(path), { 'a.test.ts': 1, 'b.test.ts': 2 });
    assert.match(readFileSync(path, 'utf8'), /^\{\n {2}"a\.test\.ts": 1,\n {2}"b\.test\.ts": 2\n\}\n$/);
    writeFileSync(path, '{"a.test.ts": 1, "b');
    assert.deepEqual(readDurations(path), {});
    writeFileSync(path, '[1, 2]');
    assert.deepEqual(readDurations(path), {});
    writeFileSync(path, '{"a.test.ts": "slow", "b.test.ts": -1, "c.test.ts": 4}');
    assert.deepEqual(readDurations(path), { 'c.test.ts': 4 });
  });
});
