import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { rotateApplicationSecret } from '../../src/auth/applications.ts';
import { hashSecret } from '../../src/auth/secret-hash.ts';
import { revokeClientTokens, setClientEnabled } from '../../src/store/repos/clients.ts';
import { findResellerByName, setResellerEnabled } from '../../src/store/repos/resellers.ts';
import { API, BASE, createTestApp, type TestApp } from '../helpers/app.ts';
import { createManualClock, type ManualClock } from '../helpers/manual-clock.ts';
import { TEST_SECRET_COST } from '../helpers/secret-cost.ts';
import { testStores } from '../helpers/stores.ts';

const TOKEN_URL = `${BASE}/oauth/token`;
const METADATA_URL = `/.well-known/oauth-authorization-server${BASE}`;

type Reply = { status: number; body: any; headers: Record<string, unknown> };

// The token endpoint also throttles failures per address: each request comes from its own
// address unless a test says otherwise, so that failures in one test do not lock out another.
// Loopback addresses (127.0.0.0/8): plain http from elsewhere is refused (https-only.test.ts).
let addresses = 0;
function freshIp(): string {
  addresses += 1;
  return `127.9.${addresses >> 8}.${addresses & 255}`;
}

/** RFC 6749 section 2.3.1: both parts are form-urlencoded, then joined with ":" and base64-encoded. */
function basic(id: string, secret: string): string {
  const enc = (s: string) => new URLSearchParams({ v: s }).toString().slice(2);
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

async function tokenRequest(
  t: TestApp,
  options: {
    json?: Record<string, unknown>;
    form?: Record<string, string> | string;
    authorization?: string;
    ip?: string;
  },
): Promise<Reply> {
  const headers: Record<string, string> = {};
  let payload: string | undefined;
  if (options.json) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(options.json);
  } else if (options.form !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    payload = typeof options.form === 'string' ? options.form : new URLSearchParams(options.form).toString();
  }
  if (options.authorization) headers['authorization'] = options.authorization;
  const res = await t.app.inject({
    method: 'POST',
    url: TOKEN_URL,
    headers,
    payload,
    remoteAddress: options.ip ?? freshIp(),
  });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

async function version(t: TestApp, token: string): Promise<Reply> {
  const res = await t.app.inject({
    method: 'GET',
    url: `${API}/version`,
    headers: { authorization: `Bearer ${token}` },
  });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

function assertTokenSuccess(res: Reply, scope = 'access products service'): string {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.deepEqual(Object.keys(res.body).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
  assert.equal(typeof res.body.access_token, 'string');
  assert.ok(res.body.access_token.length > 20);
  assert.equal(res.body.token_type, 'Bearer');
  assert.equal(res.body.expires_in, 3600);
  assert.deepEqual(res.body.scope.split(' ').sort(), scope.split(' ').sort());
  return res.body.access_token;
}

function assertOauthError(res: Reply, status: number, error: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error, error, JSON.stringify(res.body));
  assert.equal(typeof res.body.error_description, 'string');
  assert.equal(res.body.status, undefined, 'the token endpoint is plain OAuth, not enveloped');
  assert.equal(res.headers['cache-control'], 'no-store');
}

/** How soon a revocation must reach every request: 5 s. */
const REVOCATION_WINDOW_MS = 5000;

/**
 * Steps the clock the app's client-state cache reads past the revocation window, then `token`
 * must answer 401 invalid_token: a revocation made behind the app's back reached it in time.
 */
async function assertRejectedAfterWindow(t: TestApp, stateClock: ManualClock, token: string): Promise<void> {
  stateClock.advance(REVOCATION_WINDOW_MS);
  const res = await version(t, token);
  assert.equal(res.status, 401, JSON.stringify(res.body));
  assert.equal(res.body.error_code, 'invalid_token');
}

for (const store of testStores()) {
  describe(`token endpoint (POST /oauth/token) (${store})`, () => {
    let t: TestApp;
    let id: string;
    let secret: string;

    before(async () => {
      t = await createTestApp({}, { store });
      const c = await t.client();
      id = c.client_id;
      secret = c.client_secret;
    });
    after(() => t.close());

    test('client_secret_post with a JSON body', async () => {
      const res = await tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: id, client_secret: secret },
      });
      const token = assertTokenSuccess(res);
      assert.equal(res.headers['pragma'], 'no-cache');
      assert.equal((await version(t, token)).status, 200);
    });

    test('client_secret_post with a form-urlencoded body (RFC 6749)', async () => {
      const res = await tokenRequest(t, {
        form: { grant_type: 'client_credentials', client_id: id, client_secret: secret },
      });
      const token = assertTokenSuccess(res);
      assert.equal((await version(t, token)).status, 200);
    });

    test('client_secret_basic with a form body, and with a JSON body', async () => {
      const form = await tokenRequest(t, {
        authorization: basic(id, secret),
        form: { grant_type: 'client_credentials' },
      });
      assert.equal((await version(t, assertTokenSuccess(form))).status, 200);
      const json = await tokenRequest(t, {
        authorization: basic(id, secret),
        json: { grant_type: 'client_credentials' },
      });
      assertTokenSuccess(json);
      // client_id may be repeated in the body when it matches the Basic credentials.
      const both = await tokenRequest(t, {
        authorization: basic(id, secret),
        form: { grant_type: 'client_credentials', client_id: id },
      });
      assertTokenSuccess(both);
    });

    test('client_secret_basic decodes form-urlencoded credentials', async () => {
      const c = await t.client();
      const special = 'p@ss w+rd:/%&=é';
      await t.ctx.store.db
        .updateTable('clients')
        .set({ secret_hash: await hashSecret(special, TEST_SECRET_COST) })
        .where('id', '=', c.client_id)
        .execute();
      const viaBasic = await tokenRequest(t, {
        authorization: basic(c.client_id, special),
        form: { grant_type: 'client_credentials' },
      });
      assertTokenSuccess(viaBasic);
      const viaPost = await tokenRequest(t, {
        form: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: special },
      });
      assertTokenSuccess(viaPost);
      // Sent without form-encoding, "+" means a space and "%&" is no escape: that secret is not this one.
      const raw = `Basic ${Buffer.from(`${c.client_id}:${special}`).toString('base64')}`;
      assertOauthError(
        await tokenRequest(t, { authorization: raw, form: { grant_type: 'client_credentials' } }),
        401,
        'invalid_client',
      );
    });

    test('scope narrows the token; the narrowed token cannot reach other scopes', async () => {
      const res = await tokenRequest(t, {
        form: {
          grant_type: 'client_credentials',
          client_id: id,
          client_secret: secret,
          scope: 'access products',
        },
      });
      const token = assertTokenSuccess(res, 'access products');
      assert.equal((await version(t, token)).status, 200);
      const products = await t.app.inject({
        method: 'GET',
        url: `${API}/products`,
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(products.statusCode, 200);
      const service = await t.app.inject({
        method: 'GET',
        url: `${API}/service/00000000-0000-4000-8000-000000000000/status`,
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(service.statusCode, 403);
      assert.equal(service.json().error_code, 'insufficient_scope');

      const single = await tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: id, client_secret: secret, scope: 'service' },
      });
      assertTokenSuccess(single, 'service');
    });

    test("without scope, the token carries all of the application's scopes", async () => {
      const limited = await t.client({ scopes: ['access'] });
      const res = await tokenRequest(t, {
        json: {
          grant_type: 'client_credentials',
          client_id: limited.client_id,
          client_secret: limited.client_secret,
        },
      });
      assertTokenSuccess(res, 'access');
    });

    test('invalid_scope: an unknown scope, or one the application may not have', async () => {
      for (const scope of ['admin', 'access admin', 'openid']) {
        const res = await tokenRequest(t, {
          form: { grant_type: 'client_credentials', client_id: id, client_secret: secret, scope },
        });
        assertOauthError(res, 400, 'invalid_scope');
      }
      const limited = await t.client({ scopes: ['access'] });
      const res = await tokenRequest(t, {
        form: {
          grant_type: 'client_credentials',
          client_id: limited.client_id,
          client_secret: limited.client_secret,
          scope: 'access products',
        },
      });
      assertOauthError(res, 400, 'invalid_scope');
    });

    test('unsupported_grant_type for any other grant', async () => {
      for (const grant of ['password', 'authorization_code', 'refresh_token', 'CLIENT_CREDENTIALS']) {
        const res = await tokenRequest(t, {
          form: { grant_type: grant, client_id: id, client_secret: secret },
        });
        assertOauthError(res, 400, 'unsupported_grant_type');
      }
    });

    test('invalid_request: grant_type missing', async () => {
      assertOauthError(
        await tokenRequest(t, { form: { client_id: id, client_secret: secret } }),
        400,
        'invalid_request',
      );
      assertOauthError(await tokenRequest(t, {}), 400, 'invalid_request');
    });

    test('invalid_request: Basic and client_secret both, or a parameter given twice', async () => {
      const both = await tokenRequest(t, {
        authorization: basic(id, secret),
        form: { grant_type: 'client_credentials', client_secret: secret },
      });
      assertOauthError(both, 400, 'invalid_request');
      const otherId = await tokenRequest(t, {
        authorization: basic(id, secret),
        form: { grant_type: 'client_credentials', client_id: 'vrp_someone_else' },
      });
      assertOauthError(otherId, 400, 'invalid_request');
      const twice = await tokenRequest(t, {
        form: `grant_type=client_credentials&grant_type=client_credentials&client_id=${id}&client_secret=${secret}`,
      });
      assertOauthError(twice, 400, 'invalid_request');
      const notString = await tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: id, client_secret: 12345 },
      });
      assertOauthError(notString, 400, 'invalid_request');
    });

    test('invalid_request: a JSON body that does not parse', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: TOKEN_URL,
        headers: { 'content-type': 'application/json' },
        payload: '{"grant_type": ',
        remoteAddress: freshIp(),
      });
      assertOauthError(
        { status: res.statusCode, body: res.json(), headers: res.headers },
        400,
        'invalid_request',
      );
    });

    test('a body over 1 MiB is refused with an RFC 6749 client error, not server_error', async () => {
      const res = await tokenRequest(t, {
        form: {
          grant_type: 'client_credentials',
          client_id: id,
          client_secret: secret,
          pad: 'x'.repeat(1024 * 1024),
        },
      });
      assert.equal(res.status, 413);
      assert.equal(res.body.status, undefined, 'not enveloped');
      assert.equal(res.body.error, 'invalid_request', JSON.stringify(res.body));
    });

    test('invalid_client: wrong secret, unknown client, no credentials', async () => {
      const wrong = await tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: id, client_secret: `${secret}x` },
      });
      assertOauthError(wrong, 401, 'invalid_client');
      const unknown = await tokenRequest(t, {
        json: {
          grant_type: 'client_credentials',
          client_id: 'vrp_000000000000000000000000',
          client_secret: secret,
        },
      });
      assertOauthError(unknown, 401, 'invalid_client');
      assert.equal(
        unknown.body.error_description,
        wrong.body.error_description,
        'no hint which part was wrong',
      );
      const none = await tokenRequest(t, { json: { grant_type: 'client_credentials' } });
      assertOauthError(none, 401, 'invalid_client');
      const noSecret = await tokenRequest(t, { json: { grant_type: 'client_credentials', client_id: id } });
      assertOauthError(noSecret, 401, 'invalid_client');
    });

    test('the store out of reach while the client is read: 503 server_error, not counted against the address', async () => {
      const states = t.ctx.clientStates;
      const read = states.credential;
      states.credential = async () => {
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      };
      const ip = freshIp();
      try {
        // More than the five failures that lock an address out: none of them counts.
        for (let i = 0; i < 6; i++) {
          const res = await tokenRequest(t, {
            json: { grant_type: 'client_credentials', client_id: id, client_secret: secret },
            ip,
          });
          assertOauthError(res, 503, 'server_error');
          assert.doesNotMatch(String(res.body.error_description), /ECONNREFUSED|127\.0\.0\.1:5432/);
        }
      } finally {
        states.credential = read;
      }
      const res = await tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: id, client_secret: secret },
        ip,
      });
      assertTokenSuccess(res);
    });

    test('a client_id that can name no client (U+0000, a lone surrogate) is invalid_client, and counts', async () => {
      const ip = freshIp();
      const nul = `${id}\u0000`;
      const attempts: Parameters<typeof tokenRequest>[1][] = [
        { json: { grant_type: 'client_credentials', client_id: nul, client_secret: secret } },
        { json: { grant_type: 'client_credentials', client_id: 'vrp_\ud800', client_secret: secret } },
        { form: { grant_type: 'client_credentials', client_id: nul, client_secret: secret } },
        { authorization: basic(nul, secret), form: { grant_type: 'client_credentials' } },
        {
          authorization: `Basic ${Buffer.from(`${nul}:${secret}`).toString('base64')}`,
          form: { grant_type: 'client_credentials' },
        },
      ];
      assert.equal(attempts.length, 5);
      for (const options of attempts) {
        assertOauthError(await tokenRequest(t, { ...options, ip }), 401, 'invalid_client');
      }
      // Five failures from one address: the guessing throttle counted every one of them.
      assertOauthError(
        await tokenRequest(t, {
          json: { grant_type: 'client_credentials', client_id: id, client_secret: secret },
          ip,
        }),
        429,
        'temporarily_unavailable',
      );
    });

    test('invalid_client with Basic answers WWW-Authenticate: Basic', async () => {
      const wrong = await tokenRequest(t, {
        authorization: basic(id, `${secret}x`),
        form: { grant_type: 'client_credentials' },
      });
      assertOauthError(wrong, 401, 'invalid_client');
      assert.match(String(wrong.headers['www-authenticate']), /^Basic /);
      for (const authorization of [
        'Basic !!!',
        `Basic ${Buffer.from('no-colon').toString('base64')}`,
        'Bearer abc',
      ]) {
        const res = await tokenRequest(t, { authorization, form: { grant_type: 'client_credentials' } });
        assertOauthError(res, 401, 'invalid_client');
        assert.match(String(res.headers['www-authenticate']), /^Basic /);
      }
    });

    test('a disabled application, or one of a disabled reseller, gets invalid_client', async () => {
      const app = await t.client();
      await setClientEnabled(t.ctx.store.db, app.client_id, false, Date.now());
      const res = await tokenRequest(t, {
        json: {
          grant_type: 'client_credentials',
          client_id: app.client_id,
          client_secret: app.client_secret,
        },
      });
      assertOauthError(res, 401, 'invalid_client');

      const other = await t.client({ reseller: 'disabled-reseller' });
      const reseller = await findResellerByName(t.ctx.store.db, 'disabled-reseller');
      await setResellerEnabled(t.ctx.store.db, reseller!.id, false, Date.now());
      const res2 = await tokenRequest(t, {
        json: {
          grant_type: 'client_credentials',
          client_id: other.client_id,
          client_secret: other.client_secret,
        },
      });
      assertOauthError(res2, 401, 'invalid_client');
    });
  });
}

describe('token endpoint: guessing throttle', () => {
  // Lock-outs run on the server clock: the tests step it instead of sleeping through them, so
  // that Retry-After is exact whatever the machine's load.
  const clock = createManualClock();
  let t: TestApp;
  before(async () => {
    t = await createTestApp({}, { clock });
  });
  after(() => t.close());

  test('five wrong secrets lock the address out, not the application; the lock-out grows', async () => {
    const c = await t.client();
    const attacker = freshIp();
    const home = freshIp();
    const attempt = (s: string, from: string) =>
      tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: s },
        ip: from,
      });
    for (let i = 0; i < 5; i++) assertOauthError(await attempt('wrong', attacker), 401, 'invalid_client');

    const locked = await attempt(c.client_secret, attacker);
    assertOauthError(locked, 429, 'temporarily_unavailable');
    assert.equal(locked.headers['retry-after'], '1');
    // A locked address is refused before anything in its request is looked at.
    assertOauthError(await tokenRequest(t, { json: {}, ip: attacker }), 429, 'temporarily_unavailable');
    // The application, from its own address, is not locked out.
    assertTokenSuccess(await attempt(c.client_secret, home));

    clock.advance(999);
    assertOauthError(await attempt(c.client_secret, attacker), 429, 'temporarily_unavailable');
    clock.advance(1);
    // One more failure after the lock-out: locked again, for longer.
    assertOauthError(await attempt('wrong', attacker), 401, 'invalid_client');
    const again = await attempt(c.client_secret, attacker);
    assertOauthError(again, 429, 'temporarily_unavailable');
    assert.equal(again.headers['retry-after'], '2');
    assertTokenSuccess(await attempt(c.client_secret, home));

    clock.advance(1999);
    assertOauthError(await attempt(c.client_secret, attacker), 429, 'temporarily_unavailable');
    clock.advance(1);
    assertTokenSuccess(await attempt(c.client_secret, attacker));
    // The success cleared the count: one wrong secret is a plain 401 again, not a lock-out.
    assertOauthError(await attempt('wrong', attacker), 401, 'invalid_client');
    assertTokenSuccess(await attempt(c.client_secret, attacker));
  });

  test('40 wrong secrets sent at once from one address: five get 401, the rest 429 with Retry-After', async () => {
    const c = await t.client();
    const attacker = freshIp();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        tokenRequest(t, {
          json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: `guess-${i}` },
          ip: attacker,
        }),
      ),
    );
    const codes = answers.map((a) => a.status);
    assert.equal(codes.filter((s) => s === 401).length, 5, codes.join(' '));
    assert.equal(codes.filter((s) => s === 429).length, 35, codes.join(' '));
    for (const a of answers) {
      if (a.status === 401) assertOauthError(a, 401, 'invalid_client');
      else {
        assertOauthError(a, 429, 'temporarily_unavailable');
        assert.ok(Number(a.headers['retry-after']) >= 1, JSON.stringify(a.headers));
      }
    }
    // The address is locked now, as after five failures one after another.
    const locked = await tokenRequest(t, {
      json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
      ip: attacker,
    });
    assertOauthError(locked, 429, 'temporarily_unavailable');
    assert.equal(locked.headers['retry-after'], '1');
  });

  test('the right secret after wrong ones, under the limit, gets its token and gives the count back', async () => {
    const c = await t.client();
    const ip = freshIp();
    const attempt = (s: string) =>
      tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: s },
        ip,
      });
    // Four wrong and the right one at once: five attempts, all let through.
    const first = await Promise.all([
      ...['a', 'b', 'c', 'd'].map((g) => attempt(`guess-${g}`)),
      attempt(c.client_secret),
    ]);
    assert.deepEqual(
      first.map((a) => a.status),
      [401, 401, 401, 401, 200],
    );
    // Then the right one alone: the success cleared the address's count.
    assertTokenSuccess(await attempt(c.client_secret));
    const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => attempt(`again-${i}`)));
    const codes = burst.map((a) => a.status);
    assert.equal(codes.filter((s) => s === 401).length, 5, codes.join(' '));
    assert.equal(codes.filter((s) => s === 429).length, 15, codes.join(' '));
  });

  test('wrong secrets from other addresses never keep the right secret from its token', async () => {
    const c = await t.client();
    const home = freshIp();
    const body = (s: string) => ({
      grant_type: 'client_credentials',
      client_id: c.client_id,
      client_secret: s,
    });
    // Each attacker address makes its five free guesses in a row, then is locked out; the
    // application keeps getting tokens all along.
    for (const attacker of [freshIp(), freshIp(), freshIp()]) {
      for (let i = 0; i < 5; i++) {
        const guess = await tokenRequest(t, { json: body(`guess-${i}`), ip: attacker });
        assertOauthError(guess, 401, 'invalid_client');
      }
      assertOauthError(
        await tokenRequest(t, { json: body(`guess-5`), ip: attacker }),
        429,
        'temporarily_unavailable',
      );
      assertTokenSuccess(await tokenRequest(t, { json: body(c.client_secret), ip: home }));
    }
  });

  test('an address that fails for many client ids is locked out too', async () => {
    const c = await t.client();
    const ip = freshIp();
    for (let i = 0; i < 5; i++) {
      const res = await tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: `vrp_guess_${i}`, client_secret: 'guess' },
        ip,
      });
      assertOauthError(res, 401, 'invalid_client');
    }
    const res = await tokenRequest(t, {
      json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
      ip,
    });
    assertOauthError(res, 429, 'temporarily_unavailable');
    assert.equal(res.headers['retry-after'], '1');
    // Another address is not affected.
    assertTokenSuccess(
      await tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
      }),
    );
  });
});

for (const store of testStores()) {
  describe(`token revocation reaches requests within 5 s (${store})`, { concurrency: true }, () => {
    let t: TestApp;
    // The app's own (2 s) cache, stepped by the test rather than waited out.
    const stateClock = createManualClock();
    before(async () => {
      t = await createTestApp({}, { store, clientStateClock: stateClock });
      // Creates the reseller now: the tests below register applications for it concurrently.
      await t.client();
    });
    after(() => t.close());

    async function tokenOf(c: { client_id: string; client_secret: string }): Promise<string> {
      const res = await tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
      });
      return assertTokenSuccess(res);
    }

    /** An application (of `reseller`, if given) and a token of it, used once. */
    async function issued(reseller?: string) {
      const c = await t.client(reseller === undefined ? {} : { reseller });
      const token = await tokenOf(c);
      // Used once, so that the server has the application's state cached.
      assert.equal((await version(t, token)).status, 200);
      return { c, token };
    }

    test('disabling the application', async () => {
      const { c, token } = await issued();
      await setClientEnabled(t.ctx.store.db, c.client_id, false, Date.now());
      await assertRejectedAfterWindow(t, stateClock, token);
      const res = await version(t, token);
      assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
    });

    test('disabling the reseller', async () => {
      const { token } = await issued('to-disable');
      const reseller = await findResellerByName(t.ctx.store.db, 'to-disable');
      await setResellerEnabled(t.ctx.store.db, reseller!.id, false, Date.now());
      await assertRejectedAfterWindow(t, stateClock, token);
    });

    test('disabling, then enabling again, on another process: tokens from before stay refused', async () => {
      const { c, token } = await issued();
      // Straight in the store, as another process would: this one's cache is not told.
      await setClientEnabled(t.ctx.store.db, c.client_id, false, Date.now());
      await setClientEnabled(t.ctx.store.db, c.client_id, true, Date.now());
      await assertRejectedAfterWindow(t, stateClock, token);
      assert.equal((await version(t, await tokenOf(c))).status, 200, 'a token issued since works');
    });

    test('disabling the reseller, then enabling it again: tokens from before stay refused', async () => {
      const { c, token } = await issued('to-switch');
      const reseller = await findResellerByName(t.ctx.store.db, 'to-switch');
      await setResellerEnabled(t.ctx.store.db, reseller!.id, false, Date.now());
      await setResellerEnabled(t.ctx.store.db, reseller!.id, true, Date.now());
      await assertRejectedAfterWindow(t, stateClock, token);
      assert.equal((await version(t, await tokenOf(c))).status, 200, 'a token issued since works');
    });

    test('rotating the secret: old tokens and the old secret stop working, the new secret works', async () => {
      const { c, token } = await issued();
      const newSecret = await rotateApplicationSecret(t.ctx.store.db, c.client_id, Date.now(), undefined, {
        secretCost: TEST_SECRET_COST,
      });
      assert.notEqual(newSecret, c.client_secret);
      // Within the window (the tests beside this one step the same clock) the old secret may
      // still get a token from what this process read before; such a token is refused with
      // the others once the window has passed (docs/api.md, "Tokens").
      const stale = await tokenRequest(t, {
        json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
      });
      if (stale.status !== 200) assertOauthError(stale, 401, 'invalid_client');
      await assertRejectedAfterWindow(t, stateClock, token);
      if (stale.status === 200)
        await assertRejectedAfterWindow(t, stateClock, String(stale.body.access_token));
      assertOauthError(
        await tokenRequest(t, {
          json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
        }),
        401,
        'invalid_client',
      );
      const fresh = assertTokenSuccess(
        await tokenRequest(t, {
          json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: newSecret },
        }),
      );
      assert.equal((await version(t, fresh)).status, 200);
    });

    test('revoking the tokens', async () => {
      const { c, token } = await issued();
      await revokeClientTokens(t.ctx.store.db, c.client_id, Date.now());
      await assertRejectedAfterWindow(t, stateClock, token);
      // The secret still works and gives a token that works.
      const fresh = assertTokenSuccess(
        await tokenRequest(t, {
          json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
        }),
      );
      assert.equal((await version(t, fresh)).status, 200);
    });

    test('a token issued right after a rotation works at once', async () => {
      const { c } = await issued();
      const newSecret = await rotateApplicationSecret(t.ctx.store.db, c.client_id, Date.now(), undefined, {
        secretCost: TEST_SECRET_COST,
      });
      const fresh = assertTokenSuccess(
        await tokenRequest(t, {
          json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: newSecret },
        }),
      );
      const res = await version(t, fresh);
      assert.equal(res.status, 200, `a freshly issued token was refused: ${JSON.stringify(res.body)}`);
    });
  });
}

describe('bearer tokens: only what the server issued, as it issued it', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  /** Signs `payload` exactly as the server signs tokens, with the server's own key. */
  function sign(payload: unknown): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    const mac = createHmac('sha256', t.ctx.keys.tokenKey).update(body).digest('base64url');
    return `vrp1.${body}.${mac}`;
  }

  test('a correctly signed token with a missing or mistyped payload field is invalid_token', async () => {
    const issued = await t.token();
    const payload = JSON.parse(Buffer.from(issued.split('.')[1]!, 'base64url').toString('utf8'));
    // Control: the issued payload signed here is accepted, so the refusals below are the payload's.
    assert.equal((await version(t, sign(payload))).status, 200);
    const without = (key: string) => Object.fromEntries(Object.entries(payload).filter(([k]) => k !== key));
    const bad: unknown[] = [
      ...['c', 'r', 's', 'v', 'e', 'j'].map(without),
      { ...payload, s: 5 },
      { ...payload, s: null },
      { ...payload, s: ['access'] },
      { ...payload, s: 'access admin' },
      { ...payload, c: 5 },
      { ...payload, r: null },
      { ...payload, v: String(payload.v) },
      { ...payload, v: 1.5 },
      { ...payload, e: String(payload.e) },
      { ...payload, e: payload.e + 0.5 },
      { ...payload, j: 5 },
      { ...payload, x: 1 },
      null,
      [],
      'vrp',
      5,
    ];
    for (const p of bad) {
      const res = await version(t, sign(p));
      assert.equal(res.status, 401, `${JSON.stringify(p)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error_code, 'invalid_token');
    }
  });

  test('another spelling of a valid token is invalid_token', async () => {
    const token = await t.token();
    assert.equal((await version(t, token)).status, 200);
    for (const other of [
      `${token}=`,
      `${token}==`,
      `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
    ]) {
      const res = await version(t, other);
      assert.equal(res.status, 401, other);
      assert.equal(res.body.error_code, 'invalid_token');
    }
  });
});

describe('token expiry', () => {
  test('a token stops working when expires_in has passed on the server clock', async (ctx) => {
    // A server clock the test steps, from a whole second: the token's exp is in whole seconds.
    const clock = createManualClock(1_800_000_000_000);
    const t = await createTestApp({ VRP_TOKEN_TTL: '60' }, { clock });
    ctx.after(() => t.close());
    const c = await t.client();
    const res = await tokenRequest(t, {
      json: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.expires_in, 60);
    const token = res.body.access_token;
    assert.equal((await version(t, token)).status, 200);
    clock.advance(59_999);
    assert.equal((await version(t, token)).status, 200, 'not expired before expires_in has passed');
    clock.advance(1);
    const rejected = await version(t, token);
    assert.equal(rejected.status, 401);
    assert.equal(rejected.body.error_code, 'invalid_token');
    assert.match(String(rejected.headers['www-authenticate']), /error="invalid_token"/);
  });
});

describe('authorization server metadata (RFC 8414)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('served at the well-known address of the issuer {base_url}', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: METADATA_URL,
      headers: { host: 'api.example.com' },
    });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const m = res.json();
    assert.equal(m.issuer, 'http://api.example.com/vps_reseller_provider/public');
    // RFC 8414 section 3: the metadata of issuer https://host/path lives at /.well-known/oauth-authorization-server/path.
    assert.equal(`/.well-known/oauth-authorization-server${new URL(m.issuer).pathname}`, METADATA_URL);
    assert.equal(m.token_endpoint, `${m.issuer}/oauth/token`);
    assert.deepEqual(m.grant_types_supported, ['client_credentials']);
    assert.deepEqual([...m.token_endpoint_auth_methods_supported].sort(), [
      'client_secret_basic',
      'client_secret_post',
    ]);
    assert.deepEqual([...m.scopes_supported].sort(), ['access', 'products', 'service']);
    // Client credentials only: no authorization endpoint, so no response type to announce.
    assert.deepEqual(Object.keys(m).sort(), [
      'grant_types_supported',
      'issuer',
      'scopes_supported',
      'token_endpoint',
      'token_endpoint_auth_methods_supported',
    ]);
  });

  test('the token_endpoint it names is the one that issues tokens', async () => {
    const m = (await t.app.inject({ method: 'GET', url: METADATA_URL })).json();
    const c = await t.client();
    const res = await t.app.inject({
      method: 'POST',
      url: new URL(m.token_endpoint).pathname,
      headers: { authorization: basic(c.client_id, c.client_secret) },
      payload: { grant_type: 'client_credentials' },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().token_type, 'Bearer');
  });

  test('VRP_BASE_URL, when set, is the issuer', async (ctx) => {
    const t2 = await createTestApp({ VRP_BASE_URL: 'https://vps.example.net/vps_reseller_provider/public' });
    ctx.after(() => t2.close());
    const m = (
      await t2.app.inject({ method: 'GET', url: METADATA_URL, headers: { host: 'internal:8080' } })
    ).json();
    assert.equal(m.issuer, 'https://vps.example.net/vps_reseller_provider/public');
    assert.equal(m.token_endpoint, 'https://vps.example.net/vps_reseller_provider/public/oauth/token');
  });
});
