import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AttemptRefused, createSlowCheckGate } from '../../src/auth/slow-check-gate.ts';

/** Checks that run until the test ends them, counting how many run at once, per key and in all. */
function heldChecks() {
  const held: { key: string; end: () => void }[] = [];
  const running = new Map<string, number>();
  let now = 0;
  let peak = 0;
  const peakByKey = new Map<string, number>();
  return {
    held,
    get peak() {
      return peak;
    },
    peakOf: (key: string) => peakByKey.get(key) ?? 0,
    check: (key: string) => () =>
      new Promise<string>((resolve) => {
        now += 1;
        peak = Math.max(peak, now);
        running.set(key, (running.get(key) ?? 0) + 1);
        peakByKey.set(key, Math.max(peakByKey.get(key) ?? 0, running.get(key)!));
        held.push({
          key,
          end: () => {
            now -= 1;
            running.set(key, running.get(key)! - 1);
            resolve(key);
          },
        });
      }),
  };
}

const settled = (p: Promise<unknown>) =>
  p.then(
    (v) => ({ ok: true as const, v }),
    (e: unknown) => ({ ok: false as const, e }),
  );

describe('slow check gate', () => {
  test('runs at most `total` checks at once and `perKey` per key; the others wait their turn, then run', async () => {
    const gate = createSlowCheckGate({ total: 2, perKey: 1, queue: 100, perKeyQueue: 100 });
    const c = heldChecks();
    const keys = ['a', 'a', 'a', 'b', 'c', 'b', 'd'];
    const results = keys.map((k) => settled(gate.run(k, c.check(k))));
    // "a" and "b" run; everything else waits, "a"'s second because "a" already runs one.
    assert.equal(c.held.length, 2);
    assert.deepEqual(
      c.held.map((h) => h.key),
      ['a', 'b'],
    );
    assert.equal(gate.running, 2);
    assert.equal(gate.waiting, 5);
    // End the oldest running check each time one runs, until every check has run.
    let ended = 0;
    for (let turns = 0; ended < keys.length; turns++) {
      assert.ok(turns < 1000, 'every check runs in the end');
      await new Promise((r) => setImmediate(r));
      const next = c.held.shift();
      if (!next) continue;
      next.end();
      ended += 1;
    }
    const outcomes = await Promise.all(results);
    assert.ok(outcomes.every((o) => o.ok));
    assert.equal(c.peak, 2, 'never more than two at once');
    for (const k of ['a', 'b', 'c', 'd']) assert.equal(c.peakOf(k), 1, `never two of ${k} at once`);
    assert.equal(gate.running, 0);
    assert.equal(gate.waiting, 0);
  });

  test('a full queue refuses at once: 429 for a key with its share waiting, 503 when all places are taken', async () => {
    const gate = createSlowCheckGate({ total: 1, perKey: 1, queue: 3, perKeyQueue: 2 });
    const c = heldChecks();
    const running = gate.run('a', c.check('a'));
    const waiting = [gate.run('a', c.check('a')), gate.run('a', c.check('a'))];
    const third = await settled(gate.run('a', c.check('a')));
    assert.ok(!third.ok && third.e instanceof AttemptRefused);
    assert.equal(third.e.reason, 'address_busy');
    assert.equal(third.e.status, 429);
    assert.equal(third.e.retryAfter, 1);
    waiting.push(gate.run('b', c.check('b')));
    const overflow = await settled(gate.run('c', c.check('c')));
    assert.ok(!overflow.ok && overflow.e instanceof AttemptRefused);
    assert.equal(overflow.e.reason, 'server_busy');
    assert.equal(overflow.e.status, 503);
    assert.equal(gate.waiting, 3);
    // The refused ones never ran; the others run one at a time, in order.
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setImmediate(r));
      const h = c.held.shift();
      assert.ok(h, `check ${i} runs`);
      order.push(h.key);
      h.end();
    }
    assert.deepEqual(await Promise.all([running, ...waiting]), ['a', 'a', 'a', 'b']);
    assert.deepEqual(order, ['a', 'a', 'a', 'b']);
    assert.equal(c.peak, 1);
  });

  test('a check that throws frees its place', async () => {
    const gate = createSlowCheckGate({ total: 1, perKey: 1, queue: 1, perKeyQueue: 1 });
    await assert.rejects(
      gate.run('a', async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await gate.run('a', async () => 'ran'), 'ran');
    assert.equal(gate.running, 0);
  });

  test('refuses bounds that are not whole numbers', () => {
    assert.throws(() => createSlowCheckGate({ total: 0, perKey: 1, queue: 1, perKeyQueue: 1 }), /total/);
    assert.throws(() => createSlowCheckGate({ total: 1, perKey: 1.5, queue: 1, perKeyQueue: 1 }), /perKey/);
    assert.throws(() => createSlowCheckGate({ total: 1, perKey: 1, queue: -1, perKeyQueue: 1 }), /queue/);
  });
});
