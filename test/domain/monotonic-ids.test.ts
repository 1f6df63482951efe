import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { createMonotonicUuidv7, isUuid } from '../../src/domain/ids.ts';
import { newJobId } from '../../src/store/repos/jobs.ts';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const timeOf = (id: string) => Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);

test('event ids sort in the order they were made: within a millisecond and when the clock steps back', () => {
  const next = createMonotonicUuidv7(() => randomBytes(16));
  const at = Date.UTC(2026, 10, 23, 10, 30, 0, 123);
  const ids = [
    ...Array.from({ length: 5000 }, () => next(at)),
    next(at - 1000), // the clock stepped back: still after the others
    next(at + 1),
    next(at + 1),
  ];
  for (const id of ids) {
    assert.match(id, V7);
    assert.ok(isUuid(id));
  }
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, ids.length);
  assert.equal(timeOf(ids[0]!), at);
  assert.equal(timeOf(ids[5000]!), at, 'a step back keeps the last time');
  assert.equal(timeOf(ids.at(-1)!), at + 1);
  // A new millisecond starts from fresh random bits, not from the counter.
  assert.notEqual(ids[5001]!.slice(19), ids[5000]!.slice(19));
});

test('job ids are UUIDv7s in the order the jobs were accepted, so the jobs index grows at its end', () => {
  const at = Date.now();
  const ids = [newJobId(at), newJobId(at), newJobId(at + 5), newJobId(at - 50)];
  for (const id of ids) assert.match(id, V7);
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(timeOf(ids[0]!), at);
});
