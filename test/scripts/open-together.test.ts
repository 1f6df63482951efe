import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openTogether } from '../helpers/open-together.ts';

test('openTogether: all open, in order; one fails, the others that opened are closed and its error thrown', async () => {
  const closed: string[] = [];
  const thing = (name: string) => ({ name, close: async () => void closed.push(name) });
  const [a, b] = await openTogether([Promise.resolve(thing('a')), Promise.resolve(thing('b'))]);
  assert.deepEqual([a.name, b.name, closed], ['a', 'b', []]);
  await assert.rejects(
    openTogether([
      Promise.resolve(thing('app')),
      Promise.reject(new Error('no browser')),
      Promise.resolve(thing('c')),
    ]),
    /no browser/,
  );
  assert.deepEqual(closed.sort(), ['app', 'c']);
});
