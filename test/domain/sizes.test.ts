import assert from 'node:assert/strict';
import { test } from 'node:test';
import { roundGb, sumGb } from '../../src/domain/sizes.ts';
import { planRotation } from '../../src/jobs/backup-quota.ts';

test('sizes are summed to the hundredth of a GB, without the float error of each addition', () => {
  // What plain addition gives: 2.8 + 2.8 + 2.8 - 2.8 = 5.599999999999999, 1.2 + 4.4 = 5.6000000000000005.
  assert.equal(sumGb([2.8, 2.8, 2.8, -2.8]), 5.6);
  assert.equal(sumGb([1.2, 4.4]), 5.6);
  assert.equal(sumGb([0.1, 0.2]), 0.3);
  assert.equal(sumGb([0.7, 0.1, 0.1, 0.1]), 1);
  assert.equal(sumGb([]), 0);
  assert.equal(roundGb(2.8 + 2.8 + 2.8 - 2.8), 5.6);
  assert.equal(roundGb(1.234), 1.23);
});

test('rotation: backups that fill the quota exactly leave room for none, and one rotated out makes room', () => {
  const backup = (id: string, sizeGb: number, createdAt: number) => ({
    id,
    kind: 'scheduled',
    status: 'available',
    sizeGb,
    createdAt,
  });
  // 0.7 + 0.1 + 0.1 + 0.1 is 0.9999999999999999 in plain addition: not "full" at 1 GB.
  const full = [backup('a', 0.7, 1), backup('b', 0.1, 2), backup('c', 0.1, 3), backup('d', 0.1, 4)];
  assert.deepEqual(planRotation(full, 1, 0.1), ['a']);
  assert.deepEqual(planRotation(full.slice(1), 1, 0.7), []);
});
