import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPeriodic } from '../../src/jobs/periodic.ts';

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

test('a failing pass is logged and the next pass still comes; a store out of reach is a warning', async () => {
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
  const until = Date.now() + 5000;
  while (passes < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  await p.stop();
  assert.ok(passes >= 3, `passes: ${passes}`);
  assert.deepEqual(lines.slice(0, 2), [
    'error task: pass failed; trying again next time',
    'warn task: store unavailable',
  ]);
  assert.equal(p.active, false);
});

test('stop waits for the pass under way, and no pass starts after it', async () => {
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
  while (passes === 0) await new Promise((r) => setTimeout(r, 1));
  const stopped = p.stop();
  let stopResolved = false;
  void stopped.then(() => {
    stopResolved = true;
  });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(stopResolved, false, 'stop waits for the pass');
  release();
  await stopped;
  assert.equal(ended, true);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(passes, 1, 'no pass after stop');
});
