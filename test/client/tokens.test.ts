/**
 * The SDK's token: asked for once for concurrent calls, renewed before it expires (by the
 * client's clock), renewed once when the server refuses it (by the server's clock), and a
 * refusal of the token endpoint itself surfaces as its VrpError.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createClient, VrpError } from '../../client/src/index.ts';
import { rotateApplicationSecret } from '../../src/auth/applications.ts';
import { API, BASE, createTestApp, type TestApp } from '../helpers/app.ts';
import { createManualClock, type ManualClock } from '../helpers/manual-clock.ts';
import { testStores } from '../helpers/stores.ts';
import { baseUrlOf, watchedFetch } from './sdk.ts';

const TOKEN = `${BASE}/oauth/token`;
const VERSION = `${API}/version`;

for (const store of testStores()) {
  describe(`the SDK's token (${store}; tokens live 60 s)`, () => {
    let t: TestApp;
    let serverClock: ManualClock;
    // A change made by another process (the CLI's) reaches this one within its client-state
    // window (2 s): the test of a rotation steps this clock past it.
    const stateClock = createManualClock();

    before(async () => {
      serverClock = createManualClock();
      t = await createTestApp(
        { VRP_TOKEN_TTL: '60' },
        { store, clock: serverClock, clientStateClock: stateClock },
      );
    });
    after(() => t.close());

    /** A client of a new application, with its own clock and a record of its requests. */
    async function client() {
      const app = await t.client();
      const seen = watchedFetch();
      let now = Date.now();
      const vrp = createClient({
        baseUrl: await baseUrlOf(t),
        clientId: app.client_id,
        clientSecret: app.client_secret,
        fetch: seen.fetch,
        now: () => now,
      });
      return {
        app,
        vrp,
        seen: () => seen.requests.map((r) => `${r.path === TOKEN ? 'token' : r.path} ${r.status}`),
        advance: (ms: number) => {
          now += ms;
        },
      };
    }

    test('concurrent calls share one token request', async () => {
      const c = await client();
      await Promise.all(Array.from({ length: 5 }, () => c.vrp.version()));
      assert.equal(c.seen().filter((s) => s.startsWith('token')).length, 1);
    });

    test('a token due to expire is renewed before the call, without a 401', async () => {
      const c = await client();
      await c.vrp.version();
      c.advance(50_000);
      await c.vrp.version(); // still well within its life: the same token
      c.advance(5_000); // 55 s: within the last tenth of its 60 s
      await c.vrp.version();
      assert.deepEqual(c.seen(), [
        'token 200',
        `${VERSION} 200`,
        `${VERSION} 200`,
        'token 200',
        `${VERSION} 200`,
      ]);
    });

    test('a token the server refuses (its clock ran ahead) is renewed once and the call repeated', async () => {
      const c = await client();
      await c.vrp.version();
      serverClock.advance(61_000);
      assert.deepEqual(await c.vrp.version(), { version: '2.0.0' });
      assert.deepEqual(c.seen(), [
        'token 200',
        `${VERSION} 200`,
        `${VERSION} 401`,
        'token 200',
        `${VERSION} 200`,
      ]);
    });

    test('when no new token can be had (the secret was rotated), the token endpoint’s error', async () => {
      const c = await client();
      await c.vrp.version();
      await rotateApplicationSecret(t.ctx.store.db, c.app.client_id, serverClock.now());
      serverClock.advance(61_000);
      stateClock.advance(5000);
      const err = await c.vrp.version().catch((e: unknown) => e);
      assert.ok(err instanceof VrpError, String(err));
      assert.equal(err.status, 401);
      assert.equal(err.errorCode, 'invalid_client');
      assert.ok(err.requestId);
      assert.deepEqual(c.seen(), ['token 200', `${VERSION} 200`, `${VERSION} 401`, 'token 401']);
    });
  });
}
