/**
 * A service's details are made at the end of the event loop's turn, with those of the turn's
 * other requests (src/http/turn-end.ts): every answer is still its own request's, and a caller
 * still sees only its own services.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { turnEnd } from '../../src/http/turn-end.ts';
import { call, createTestApp, orderRunning, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

describe('turnEnd', () => {
  test('one promise for the callers of a turn, settled after what the turn scheduled before it; a new one the next turn', async () => {
    const seen: string[] = [];
    setImmediate(() => seen.push('immediate scheduled first'));
    const first = turnEnd();
    const second = turnEnd();
    assert.equal(first, second, 'the callers of one turn share one promise');
    await first;
    seen.push('turn ended');
    assert.deepEqual(seen, ['immediate scheduled first', 'turn ended']);
    const next = turnEnd();
    assert.notEqual(next, first, 'a later turn has a promise of its own');
    await next;
  });
});

for (const store of testStores()) {
  describe(`details made together at the turn's end (${store})`, () => {
    let t: TestApp;
    const tokens = new Map<string, string>();
    const tokenOf = (reseller: string) => tokens.get(reseller) ?? assert.fail(`no token for ${reseller}`);
    const services: { reseller: string; id: string; alone: unknown }[] = [];

    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      for (const reseller of ['acme', 'globex']) {
        tokens.set(reseller, await t.token({ reseller }));
        for (const n of [1, 2]) {
          const id = await orderRunning(t, tokenOf(reseller), `s${n}.${reseller}.example.com`);
          const alone = await call(t, tokenOf(reseller), 'GET', `service/${id}/details`);
          assert.equal(alone.status, 200);
          services.push({ reseller, id, alone: alone.body });
        }
      }
    });
    after(() => t.close());

    test('many at once: each answer is its own service’s, as asked alone; another reseller’s service is not found', async () => {
      const asked = Array.from({ length: 48 }, (_, i) => {
        const s = services[i % services.length] ?? assert.fail('no service');
        const other = services.find((x) => x.reseller !== s.reseller) ?? assert.fail('no other reseller');
        if (i % 6 === 5) return { token: tokenOf(s.reseller), id: other.id, want: 404 };
        return { token: tokenOf(s.reseller), id: s.id, want: 200, alone: s.alone };
      });
      const answers = await Promise.all(
        asked.map((a, i) =>
          call(t, a.token, i % 2 ? 'POST' : 'GET', `service/${a.id}/details`, i % 2 ? {} : undefined),
        ),
      );
      for (const [i, a] of asked.entries()) {
        const answer = answers[i] ?? assert.fail(`no answer ${i}`);
        assert.equal(answer.status, a.want, `request ${i}`);
        if (a.want === 200) assert.deepEqual(answer.body, a.alone, `request ${i}: its own service's details`);
        else assert.equal(answer.body.error_code, 'service_not_found');
      }
    });
  });
}
