import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPollLoop } from '../../src/loop/poll-loop.ts';
import { createJobSignal } from '../../src/loop/signal.ts';

/** A promise and its resolve, to hold work open until a test lets it end. */
function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const HOUR = 3_600_000;

const unexpected = (err: unknown) => assert.fail(`unexpected loop error: ${String(err)}`);

/** A loop that never looks, with work tracked under `job-1` twice: the first still under way when the second came. */
function trackedTwice() {
  const loop = createPollLoop<string>({
    tick: async () => false,
    signal: createJobSignal(),
    pollMs: HOUR,
    concurrency: 2,
    onError: unexpected,
  });
  const first = deferred();
  const second = deferred();
  loop.track('job-1', first.promise);
  const firstRun = loop.running.get('job-1');
  loop.track('job-1', second.promise);
  return { loop, firstRun, first, second };
}

describe('the poll loop the worker and the webhook sender share (src/loop/poll-loop.ts)', () => {
  test('work tracked again under a key still under way: the first one ending leaves the second tracked', async () => {
    const { loop, firstRun, first, second } = trackedTwice();
    first.resolve();
    await firstRun;
    assert.deepEqual([...loop.running.keys()], ['job-1'], 'the second is still under way');
    second.resolve();
    await loop.running.get('job-1');
    assert.equal(loop.running.size, 0);
  });

  test('a stop waits for work whose key was tracked again while it went on', async () => {
    const { loop, first, second } = trackedTwice();
    second.resolve();
    let stopped = false;
    const stopping = loop.stop({ graceMs: HOUR }).then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(stopped, false, 'the first work is still under way');
    first.resolve();
    await stopping;
    assert.equal(stopped, true);
  });

  test('wake() makes it look at once, not at the end of its poll', async () => {
    let ticks = 0;
    const second = deferred();
    const loop = createPollLoop<string>({
      tick: async () => {
        ticks += 1;
        if (ticks === 2) second.resolve();
        return false;
      },
      signal: createJobSignal(),
      pollMs: HOUR,
      concurrency: 1,
      onError: unexpected,
    });
    loop.start();
    loop.wake();
    await second.promise;
    await loop.stop({ graceMs: 0 });
    assert.equal(ticks, 2);
  });

  test('stop() ends the looks, then waits for the work under way, which finishes unaborted', async () => {
    const work = deferred();
    const tracked = deferred();
    let ticks = 0;
    const loop = createPollLoop<string>({
      tick: async () => {
        ticks += 1;
        if (ticks === 1) {
          loop.track('a', work.promise);
          tracked.resolve();
        }
        return false;
      },
      signal: createJobSignal(),
      pollMs: HOUR,
      concurrency: 2,
      onError: unexpected,
    });
    loop.start();
    await tracked.promise;
    assert.equal(loop.running.size, 1);
    let stopped = false;
    const stopping = loop
      .stop({ graceMs: HOUR, onGraceOver: () => assert.fail('no grace is over') })
      .then(() => {
        stopped = true;
      });
    // Turns enough for the loop to stop looking (it takes two): the work is still under way,
    // so stop() has not returned.
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    assert.equal(stopped, false);
    work.resolve();
    await stopping;
    assert.equal(loop.running.size, 0);
    assert.equal(loop.workSignal.aborted, false);
    assert.equal(ticks, 1);
  });

  test('work still under way when the grace period is over is aborted with the reason, and waited for', async () => {
    const reason = new Error('stopping');
    const seen: unknown[] = [];
    const loop = createPollLoop<string>({
      tick: async () => false,
      signal: createJobSignal(),
      pollMs: HOUR,
      concurrency: 1,
      onError: unexpected,
    });
    loop.start();
    const signal = loop.workSignal;
    let ended = false;
    loop.track(
      'stuck',
      new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => {
          seen.push(signal.reason);
          setImmediate(() => {
            ended = true;
            resolve();
          });
        }),
      ),
    );
    const over: number[] = [];
    await loop.stop({ graceMs: 0, reason, onGraceOver: (n) => over.push(n) });
    assert.deepEqual(over, [1]);
    assert.deepEqual(seen, [reason]);
    assert.equal(ended, true, 'stop() returned only once the aborted work had ended');
    // A new start gets a new work signal.
    loop.start();
    assert.equal(loop.workSignal.aborted, false);
    await loop.stop({ graceMs: 0 });
  });

  test('a tick that throws is reported, and the loop goes on looking', async () => {
    const errors: unknown[] = [];
    const boom = new Error('store down');
    let ticks = 0;
    const recovered = deferred();
    const loop = createPollLoop<string>({
      tick: async () => {
        ticks += 1;
        if (ticks === 1) throw boom;
        recovered.resolve();
        return false;
      },
      signal: createJobSignal(),
      pollMs: HOUR,
      concurrency: 1,
      onError: (err) => errors.push(err),
    });
    loop.start();
    await recovered.promise;
    await loop.stop({ graceMs: 0 });
    assert.deepEqual(errors, [boom]);
  });

  test('a tick that found more looks again at once, while slots are free', async () => {
    let ticks = 0;
    const third = deferred();
    const loop = createPollLoop<string>({
      tick: async () => {
        ticks += 1;
        if (ticks === 3) third.resolve();
        return ticks < 3;
      },
      signal: createJobSignal(),
      pollMs: HOUR,
      concurrency: 1,
      onError: unexpected,
    });
    loop.start();
    await third.promise;
    await loop.stop({ graceMs: 0 });
    assert.equal(ticks, 3);
  });
});
