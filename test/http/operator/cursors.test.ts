/**
 * The operator API's list cursors are signed: a list takes back only a `next_cursor` it gave.
 * Anything else (a NUL or other text inside a made-up cursor, garbage, a well-formed cursor
 * signed with another key or not at all, an altered one, another list's) is 400 invalid_cursor
 * on both stores, never a 500 from the database or a quietly empty page; the console's paged
 * lists, which pass their `cursor` on, show the same refusal.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { CONSOLE } from '../../../src/http/base-path.ts';
import { call, createTestApp, type TestApp } from '../../helpers/app.ts';
import { consoleCookie } from '../../helpers/console-session.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { createTestOperator, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const LISTS = ['resellers', 'services', 'jobs', 'hosts', 'audit'] as const;
const PASSWORD = 'correct horse battery staple';
const b64 = (text: string) => Buffer.from(text).toString('base64url');

/** A cursor in the signed format, signed with `key` (not the server's). */
function signedWith(key: Buffer, parts: unknown[]): string {
  const payload = b64(JSON.stringify(parts));
  return `${payload}.${createHmac('sha256', key).update(payload).digest('base64url')}`;
}

/** Cursors no list gave, for list `list`: what a client might send by mistake or on purpose. */
function madeUp(list: string, valid: string): Record<string, string> {
  const [payload = '', mac = ''] = valid.split('.');
  const flipped = `${payload.slice(0, -1)}${payload.endsWith('A') ? 'B' : 'A'}.${mac}`;
  return {
    'unsigned, with a NUL': b64(JSON.stringify([list, '\u0000'])),
    'unsigned, with a NUL and a made-up signature': `${b64(JSON.stringify([list, 'a\u0000b']))}.${b64('x'.repeat(32))}`,
    'unsigned, well formed': b64(JSON.stringify([list, '00000000-0000-7000-8000-000000000000'])),
    'signed with another key': signedWith(randomBytes(32), [list, '\u0000']),
    'a valid one altered': flipped,
    'a valid one without its signature': payload,
    'a valid one with its signature twice': `${valid}.${mac}`,
    garbage: 'abc',
    'only dots': '...',
    'not base64url': '%%%',
  };
}

for (const store of testStores()) {
  describe(`operator API: cursors are signed, every list refuses another (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let cookie: string;
    /** The `next_cursor` of each list's first page of one item. */
    const first: Record<string, string> = {};
    /** The first two items of each list, one page each. */
    const items: Record<string, unknown[]> = {};

    before(async () => {
      // With a worker: it records the configured hosts that the hosts list shows.
      t = await createTestApp({}, { store, worker: true });
      const operator = await createTestOperator(t, { name: 'pager', password: PASSWORD });
      ops = await operatorToken(t, operator);
      cookie = await consoleCookie(t, 'pager', PASSWORD);
      for (const name of ['r-1', 'r-2']) await opsCall(t, ops, 'POST', 'resellers', { name });
      const acme = await t.token({ reseller: 'acme' });
      for (const domain of ['c1.example.com', 'c2.example.com']) {
        const ordered = await call(t, acme, 'POST', 'service/create-order', smallOrder(domain), {
          'x-envelope-variant': 'B',
        });
        const id = ordered.body.data[0].service_id;
        assert.equal((await call(t, acme, 'POST', `service/${id}/create`, undefined)).status, 200);
      }
      for (const list of LISTS) {
        const page1 = await opsCall(t, ops, 'GET', `${list}?limit=1`);
        assert.equal(page1.status, 200, `${list}: ${JSON.stringify(page1.body)}`);
        assert.equal(typeof page1.body.data.next_cursor, 'string', list);
        first[list] = page1.body.data.next_cursor;
        items[list] = page1.body.data.items;
      }
    });
    after(() => t.close());

    test('a cursor a list gave pages on: the next item, not the first again', async () => {
      for (const list of LISTS) {
        const page2 = await opsCall(t, ops, 'GET', `${list}?limit=1&cursor=${first[list]}`);
        assert.equal(page2.status, 200, `${list}: ${JSON.stringify(page2.body)}`);
        assert.equal(page2.body.data.items.length, 1, list);
        assert.notDeepEqual(page2.body.data.items, items[list], list);
      }
    });

    test('a NUL, garbage, a forged or altered cursor: 400 invalid_cursor on every list', async () => {
      for (const list of LISTS) {
        for (const [what, cursor] of Object.entries(madeUp(list, first[list]!))) {
          const res = await opsCall(t, ops, 'GET', `${list}?cursor=${encodeURIComponent(cursor)}`);
          assert.equal(res.status, 400, `${list}, ${what}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.error_code, 'invalid_cursor', `${list}, ${what}`);
        }
      }
    });

    test('a cursor of another list is 400 invalid_cursor', async () => {
      for (const list of LISTS) {
        for (const other of LISTS.filter((l) => l !== list)) {
          const res = await opsCall(t, ops, 'GET', `${list}?cursor=${first[other]}`);
          assert.equal(res.status, 400, `${other}'s cursor on ${list}`);
          assert.equal(res.body.error_code, 'invalid_cursor', `${other}'s cursor on ${list}`);
        }
      }
    });

    test('the console’s paged lists show the refusal (400, never 500), and page on with a valid one', async () => {
      for (const list of LISTS) {
        const get = (cursor: string) =>
          t.app.inject({
            method: 'GET',
            url: `${CONSOLE}/${list}?cursor=${encodeURIComponent(cursor)}`,
            headers: { cookie },
          });
        const good = await get(first[list]!);
        assert.equal(good.statusCode, 200, `${list}: ${good.body.slice(0, 300)}`);
        for (const [what, cursor] of Object.entries(madeUp(list, first[list]!))) {
          const res = await get(cursor);
          // The audit page keeps its filter form and shows the API's reason beside it.
          assert.equal(res.statusCode, list === 'audit' ? 200 : 400, `console ${list}, ${what}`);
          assert.match(res.body, /cursor is not one this list gave/, `console ${list}, ${what}`);
        }
      }
    });
  });
}
