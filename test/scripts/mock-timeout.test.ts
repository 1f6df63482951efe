import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mockSetTimeout } from '../helpers/mock-timeout.ts';

/** The timers alive in this process now (each keeps it running until it fires or is cleared). */
const liveTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

test('mockSetTimeout: a real timer set before the mock is cleared for real under it, and the mocked ones still run on the mocked clock', (t) => {
  const before = liveTimers();
  // As a store's pool does: a real timer for an idle connection, cleared once the connection is taken.
  const idleClose = setTimeout(() => assert.fail('a cleared timer ran'), 60_000);
  // Should an assertion below fail, the timer goes with the test, not a minute later.
  t.after(() => clearTimeout(idleClose));
  assert.equal(liveTimers(), before + 1);
  mockSetTimeout(t);
  clearTimeout(idleClose);
  let ran = 0;
  const mocked = setTimeout(() => ran++, 10);
  const cancelled = setTimeout(() => ran++, 10);
  clearTimeout(cancelled);
  t.mock.timers.tick(10);
  assert.equal(ran, 1, 'the mocked timer ran at its time; the mocked one cleared did not');
  clearTimeout(mocked);
  t.mock.timers.reset();
  assert.equal(liveTimers(), before, 'no real timer left to keep the process alive');
});

test("Node's mock alone leaves such a timer alive (what mockSetTimeout is for)", (t) => {
  const before = liveTimers();
  const idleClose = setTimeout(() => {}, 60_000);
  t.mock.timers.enable({ apis: ['setTimeout'] });
  clearTimeout(idleClose);
  t.mock.timers.reset();
  const left = liveTimers();
  clearTimeout(idleClose);
  assert.equal(left, before + 1, 'if Node now clears real timers under its mock, mockSetTimeout can go');
});

test('mockSetTimeout with dateFrom: Date starts there and moves with the ticks', (t) => {
  mockSetTimeout(t, { dateFrom: 1_000_000 });
  assert.equal(Date.now(), 1_000_000);
  t.mock.timers.tick(1500);
  assert.equal(Date.now(), 1_001_500);
  t.mock.timers.reset();
  assert.ok(Date.now() > 1_700_000_000_000, 'the real clock back');
});
