/**
 * The system resolver's look-ups are limited (src/webhooks/lookup.ts, MAX_SYSTEM_LOOKUPS): names
 * whose servers never answer hold at most that many of libuv's threads, and the look-ups behind
 * them run in turn as each ends, answered or failed, each caller getting its own answer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type HostLookup, limitLookups, MAX_SYSTEM_LOOKUPS } from '../../src/webhooks/lookup.ts';
import { promiseState } from '../helpers/promise-state.ts';

test('at most two look-ups at once; the others run in order as each ends, answered or failed', async () => {
  assert.equal(MAX_SYSTEM_LOOKUPS, 2);
  const started: { hostname: string; settle: (ok: boolean) => void }[] = [];
  // The n-th look-up started answers 192.0.2.n.
  const slow: HostLookup = (hostname) =>
    new Promise((resolve, reject) => {
      const address = `192.0.2.${started.length + 1}`;
      started.push({
        hostname,
        settle: (ok) =>
          ok ? resolve([{ address, family: 4 }]) : reject(new Error(`${hostname}: no answer`)),
      });
    });
  const lookup = limitLookups(slow, MAX_SYSTEM_LOOKUPS);
  const names = ['a.example', 'b.example', 'c.example', 'd.example', 'e.example'];
  const answers = names.map((n) => lookup(n));
  await promiseState(answers[0]!);
  assert.deepEqual(
    started.map((s) => s.hostname),
    ['a.example', 'b.example'],
    'two under way, three waiting',
  );
  // One fails: the next waiter starts; its caller gets the failure.
  started[1]!.settle(false);
  await assert.rejects(answers[1]!, /b\.example: no answer/);
  await promiseState(answers[2]!);
  assert.deepEqual(
    started.map((s) => s.hostname),
    ['a.example', 'b.example', 'c.example'],
  );
  // One answers: the next starts, and the caller gets its own answer.
  started[0]!.settle(true);
  assert.deepEqual(await answers[0]!, [{ address: '192.0.2.1', family: 4 }]);
  await promiseState(answers[3]!);
  assert.deepEqual(
    started.map((s) => s.hostname),
    ['a.example', 'b.example', 'c.example', 'd.example'],
  );
  for (const s of started.slice(2)) s.settle(true);
  await promiseState(answers[4]!);
  assert.equal(started.length, 5);
  started[4]!.settle(true);
  assert.deepEqual(
    (await Promise.all(answers.slice(2))).map((a) => a[0]!.address),
    ['192.0.2.3', '192.0.2.4', '192.0.2.5'],
  );
  // All done: a new look-up starts at once.
  const again = lookup('f.example');
  await promiseState(again);
  assert.equal(started.at(-1)!.hostname, 'f.example');
  started.at(-1)!.settle(true);
  await again;
});
