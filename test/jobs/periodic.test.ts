import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPeriodic } from '../../src/jobs/periodic.ts';
import { waitUntil } from '../helpers/budget.ts';
import { promiseState } from '../helpers/promise-state.ts';

// setTimeout is mocked: the interval passes when the test ticks it, so "no pass after stop" is
// checked by stepping the clock far past the interval, not by waiting and hoping.

function recordingLog() {
  const lines: string[] = [];
  return {
    lines,
    log: {
      warn: (...args: unknown[]) => {
        lines.push(`warn ${String(args[1])}`);
      },
      error: (...args: unknown[]) => {
        lines.push(`error ${String(args[1])}`);
      },
    },
  };
}

test('a failing pass is logged and the next pass still comes; a store out of reach is a warning', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { lines, log } = recordingLog();
  let passes = 0;
  const unavailable = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
    code: 'ECONNREFUSED',
  });
  const p = createPeriodic({
    name: 'task',
    intervalMs: 5,
    log,
    pass: async () => {
      passes++;
      if (passes === 1) throw new Error('boom');
      if (passes === 2) throw unavailable;
    },
  });
  p.start();
  await waitUntil('three passes', () => {
    t.mock.timers.tick(5);
    return passes >= 3;
  });
  await p.stop();
  assert.equal(passes, 3);
  assert.deepEqual(lines.slice(0, 2), [
    'error task: pass failed; trying again next time',
    'warn task: store unavailable',
  ]);
  assert.equal(p.active, false);
});

test('stop waits for the pass under way, and no pass starts after it', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { log } = recordingLog();
  let passes = 0;
  let release: () => void = () => {};
  let ended = false;
  const p = createPeriodic({
    name: 'task',
    intervalMs: 1,
    log,
    pass: async () => {
      passes++;
      await new Promise<void>((r) => {
        release = r;
      });
      ended = true;
    },
  });
  p.start();
  t.mock.timers.tick(0);
  assert.equal(passes, 1, 'the first pass starts at once');
  const stopped = p.stop();
  // The pass cannot end before release(), so stop() must still be waiting for it.
  assert.equal(await promiseState(stopped), 'pending', 'stop waits for the pass');
  release();
  await stopped;
  assert.equal(ended, true);
  t.mock.timers.tick(1000);
  assert.equal(passes, 1, 'no pass after stop');
});
