import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RegisteredApplication } from '../../src/auth/applications.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { API, createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

type Reply = { status: number; body: any; headers: Record<string, unknown> };

async function request(
  t: TestApp,
  method: 'GET' | 'POST' | 'DELETE' | 'PUT',
  url: string,
  options: { token?: string; headers?: Record<string, string>; payload?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  const res = await t.app.inject({ method, url, headers, payload: options.payload });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

function assertErrorB(res: Reply, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.status, 'Error', JSON.stringify(res.body));
  assert.deepEqual(res.body.data, []);
  assert.equal(res.body.error_code, code);
  assert.equal(typeof res.body.message, 'string');
  assert.ok(res.body.message.length > 0, 'an error says what went wrong');
}

function assertErrorA(res: Reply, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.success, 'false', JSON.stringify(res.body));
  assert.equal(res.body.data, '[]');
  assert.equal(res.body.error_code, code);
  assert.ok(res.body.message.length > 0);
  assert.equal(res.body.status, undefined);
}

for (const store of testStores()) {
  describe(`access scope: test-connection and version (${store})`, () => {
    let t: TestApp;
    let appB: RegisteredApplication;
    let tokenB: string;
    let tokenA: string;
    let productsOnly: string;

    before(async () => {
      t = await createTestApp({}, { store });
      appB = await t.client();
      tokenB = await t.token({ client: appB });
      tokenA = await t.token({ variant: 'A' });
      productsOnly = await t.token({ scopes: ['products'] });
    });
    after(() => t.close());

    describe('envelopes', () => {
      test('variant B (the default): test-connection', async () => {
        const res = await request(t, 'POST', `${API}/test-connection`, { token: tokenB });
        assert.equal(res.status, 200);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.deepEqual(Object.keys(res.body).sort(), ['data', 'message', 'status']);
        assert.equal(res.body.status, 'Success');
        assert.deepEqual(res.body.data, []);
        assert.equal(typeof res.body.message, 'string');
        assert.ok(res.body.message.length > 0, 'variant B confirms the connection in message');
      });

      test('variant B: version', async () => {
        const res = await request(t, 'GET', `${API}/version`, { token: tokenB });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, { status: 'Success', message: '', data: { version: '2.0.0' } });
      });

      test("variant A (the application's default): data is a string holding JSON", async () => {
        const version = await request(t, 'GET', `${API}/version`, { token: tokenA });
        assert.equal(version.status, 200);
        assert.deepEqual(Object.keys(version.body).sort(), ['data', 'message', 'success']);
        assert.equal(version.body.success, 'true');
        assert.equal(typeof version.body.data, 'string');
        assert.deepEqual(JSON.parse(version.body.data), { version: '2.0.0' });

        const conn = await request(t, 'POST', `${API}/test-connection`, { token: tokenA });
        assert.equal(conn.status, 200);
        assert.equal(conn.body.success, 'true');
        assert.equal(conn.body.data, '[]');
        assert.equal(typeof conn.body.message, 'string');
      });

      test("X-Envelope-Variant overrides the application's default, both ways", async () => {
        const aFromB = await request(t, 'GET', `${API}/version`, {
          token: tokenB,
          headers: { 'x-envelope-variant': 'A' },
        });
        assert.equal(aFromB.body.success, 'true');
        assert.deepEqual(JSON.parse(aFromB.body.data), { version: '2.0.0' });

        const bFromA = await request(t, 'POST', `${API}/test-connection`, {
          token: tokenA,
          headers: { 'x-envelope-variant': 'B' },
        });
        assert.equal(bFromA.body.status, 'Success');
        assert.deepEqual(bFromA.body.data, []);
      });

      test('an invalid X-Envelope-Variant is 400 invalid_envelope_variant', async () => {
        for (const value of ['C', 'AB', '', 'variant-a']) {
          const res = await request(t, 'GET', `${API}/version`, {
            token: tokenB,
            headers: { 'x-envelope-variant': value },
          });
          assertErrorB(res, 400, 'invalid_envelope_variant');
        }
      });

      test("errors come in the caller's variant too", async () => {
        const res = await request(t, 'GET', `${API}/version`, { headers: { 'x-envelope-variant': 'A' } });
        assertErrorA(res, 401, 'invalid_token');
        const scopeA = await t.token({ scopes: ['products'], variant: 'A' });
        assertErrorA(await request(t, 'GET', `${API}/version`, { token: scopeA }), 403, 'insufficient_scope');
      });
    });

    describe('bearer authentication (RFC 6750)', () => {
      function assertInvalidToken(res: Reply): void {
        assertErrorB(res, 401, 'invalid_token');
        const challenge = String(res.headers['www-authenticate']);
        assert.match(challenge, /^Bearer /);
        assert.match(challenge, /error="invalid_token"/);
      }

      test('no Authorization header', async () => {
        assertInvalidToken(await request(t, 'GET', `${API}/version`));
        assertInvalidToken(await request(t, 'POST', `${API}/test-connection`));
      });

      test('a malformed Authorization header', async () => {
        for (const authorization of [
          'Bearer',
          'Bearer ',
          `Basic ${Buffer.from('a:b').toString('base64')}`,
          tokenB,
          `Token ${tokenB}`,
          `Bearer ${tokenB} extra`,
        ]) {
          const res = await request(t, 'GET', `${API}/version`, { headers: { authorization } });
          assertInvalidToken(res);
        }
      });

      test('the scheme in any case and spaces around the token, as RFC 6750 spells a bearer header', async () => {
        for (const authorization of [
          `Bearer ${tokenB}`,
          `bearer ${tokenB}`,
          `BEARER ${tokenB}`,
          `Bearer  ${tokenB}`,
          `Bearer ${tokenB} `,
        ]) {
          const res = await request(t, 'GET', `${API}/version`, { headers: { authorization } });
          assert.equal(res.status, 200, authorization);
        }
      });

      test('a garbage or tampered token', async () => {
        const tampered = `${tokenB.slice(0, -3)}${tokenB.endsWith('AAA') ? 'BBB' : 'AAA'}`;
        for (const token of ['abc', 'vrp1.abc.def', tampered, `${tokenB}x`]) {
          assertInvalidToken(await request(t, 'GET', `${API}/version`, { token }));
        }
      });

      test('an expired token', async () => {
        const reseller = await findResellerByName(t.ctx.store.db, 'acme');
        const claims = {
          clientId: appB.client_id,
          resellerId: reseller!.id,
          scopes: ['access', 'products', 'service'] as const,
          version: 1,
        };
        const now = Math.floor(Date.now() / 1000);
        const valid = t.ctx.signer.issue({ ...claims, exp: now + 600 });
        assert.equal((await request(t, 'GET', `${API}/version`, { token: valid })).status, 200, 'control');
        const expired = t.ctx.signer.issue({ ...claims, exp: now - 1 });
        assertInvalidToken(await request(t, 'GET', `${API}/version`, { token: expired }));
        assertInvalidToken(await request(t, 'POST', `${API}/test-connection`, { token: expired }));
      });

      test('a well-signed token of an unknown application', async () => {
        const token = t.ctx.signer.issue({
          clientId: 'vrp_000000000000000000000000',
          resellerId: '00000000-0000-4000-8000-000000000000',
          scopes: ['access'],
          version: 1,
          exp: Math.floor(Date.now() / 1000) + 600,
        });
        assertInvalidToken(await request(t, 'GET', `${API}/version`, { token }));
      });

      test('a token without the access scope is 403 insufficient_scope', async () => {
        for (const [method, path] of [
          ['GET', 'version'],
          ['POST', 'test-connection'],
        ] as const) {
          const res = await request(t, method, `${API}/${path}`, { token: productsOnly });
          assertErrorB(res, 403, 'insufficient_scope');
          const challenge = String(res.headers['www-authenticate']);
          assert.match(challenge, /^Bearer /);
          assert.match(challenge, /error="insufficient_scope"/);
          assert.match(challenge, /scope="access"/);
        }
      });
    });

    describe('request bodies', () => {
      test('test-connection with no body, an empty body or {} under Content-Type: application/json', async () => {
        for (const payload of [undefined, '', '{}', '  \n']) {
          const res = await request(t, 'POST', `${API}/test-connection`, {
            token: tokenB,
            headers: { 'content-type': 'application/json', accept: 'application/json' },
            payload,
          });
          assert.equal(res.status, 200, `payload ${JSON.stringify(payload)}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.status, 'Success');
        }
      });

      test('a body that is not JSON is 400 validation_failed', async () => {
        for (const payload of ['{', 'not json', '{"a":1,}']) {
          const res = await request(t, 'POST', `${API}/test-connection`, {
            token: tokenB,
            headers: { 'content-type': 'application/json' },
            payload,
          });
          assertErrorB(res, 400, 'validation_failed');
        }
      });

      test('a JSON body that is not an object is 400 validation_failed', async () => {
        const res = await request(t, 'POST', `${API}/test-connection`, {
          token: tokenB,
          headers: { 'content-type': 'application/json' },
          payload: '[1,2]',
        });
        assertErrorB(res, 400, 'validation_failed');
      });

      test('a body over 1 MiB is 413 payload_too_large, in the envelope', async () => {
        const payload = JSON.stringify({ pad: 'x'.repeat(1024 * 1024) });
        const b = await request(t, 'POST', `${API}/test-connection`, {
          token: tokenB,
          headers: { 'content-type': 'application/json' },
          payload,
        });
        assertErrorB(b, 413, 'payload_too_large');
        const a = await request(t, 'POST', `${API}/test-connection`, {
          token: tokenA,
          headers: { 'content-type': 'application/json' },
          payload,
        });
        assertErrorA(a, 413, 'payload_too_large');
      });
    });

    describe('routing', () => {
      test('an unknown route is 404 in the envelope', async () => {
        for (const url of [`${API}/nothing-here`, `${API}/versions`, '/api/v2/version', '/nope']) {
          assertErrorB(await request(t, 'GET', url, { token: tokenB }), 404, 'not_found');
        }
        const a = await request(t, 'GET', `${API}/nothing-here`, { headers: { 'x-envelope-variant': 'A' } });
        assertErrorA(a, 404, 'not_found');
      });

      test('a known route with the wrong method is 405 with Allow', async () => {
        const del = await request(t, 'DELETE', `${API}/version`, { token: tokenB });
        assertErrorB(del, 405, 'method_not_allowed');
        const allow = String(del.headers['allow']).split(/, */);
        assert.ok(allow.includes('GET'), `Allow: ${del.headers['allow']}`);
        assert.ok(!allow.includes('DELETE'));

        const get = await request(t, 'GET', `${API}/test-connection`, { token: tokenB });
        assertErrorB(get, 405, 'method_not_allowed');
        assert.deepEqual(String(get.headers['allow']).split(/, */), ['POST']);

        const put = await request(t, 'PUT', `${API}/products`, { token: tokenB });
        assertErrorB(put, 405, 'method_not_allowed');
        assert.deepEqual(String(put.headers['allow']).split(/, */).sort(), ['GET', 'POST']);
      });

      test('a trailing slash reaches the same route', async () => {
        const res = await request(t, 'GET', `${API}/version/`, { token: tokenB });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body.data, { version: '2.0.0' });
      });
    });

    describe('request ids', () => {
      test('X-Request-Id is echoed when given', async () => {
        const res = await request(t, 'GET', `${API}/version`, {
          token: tokenB,
          headers: { 'x-request-id': 'billing-run-42:item-7' },
        });
        assert.equal(res.headers['x-request-id'], 'billing-run-42:item-7');
        const err = await request(t, 'GET', `${API}/version`, { headers: { 'x-request-id': 'req-401' } });
        assert.equal(err.status, 401);
        assert.equal(err.headers['x-request-id'], 'req-401');
      });

      test('X-Request-Id is generated otherwise, different for each request', async () => {
        const a = await request(t, 'GET', `${API}/version`, { token: tokenB });
        const b = await request(t, 'GET', `${API}/nothing`, {});
        for (const res of [a, b]) assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
        assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
      });

      test('an unusable X-Request-Id is replaced, not echoed', async () => {
        const res = await request(t, 'GET', `${API}/version`, {
          token: tokenB,
          headers: { 'x-request-id': 'has spaces and <script>' },
        });
        assert.equal(res.status, 200);
        assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      });
    });

    describe('probes', () => {
      test('GET /healthz and /readyz answer 200 without a token', async () => {
        const health = await request(t, 'GET', '/healthz');
        assert.equal(health.status, 200);
        assert.equal(health.body.status, 'ok');
        const ready = await request(t, 'GET', '/readyz');
        assert.equal(ready.status, 200);
        assert.equal(ready.body.status, 'ready');
      });
    });
  });
}

describe('rate limiting', () => {
  test('a burst, then 429 rate_limited with Retry-After; other applications are not affected', async (ctx) => {
    const t = await createTestApp({ VRP_RATE_LIMIT: '2', VRP_RATE_BURST: '2' });
    ctx.after(() => t.close());
    const token = await t.token();
    const other = await t.token({ variant: 'A' });
    // The limiter reads Date.now(): mocked, time passes only when the test says, so a slow
    // machine refills no bucket between the requests of the burst.
    ctx.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    for (let i = 0; i < 2; i++) {
      assert.equal((await request(t, 'GET', `${API}/version`, { token })).status, 200, `request ${i + 1}`);
    }
    const limited = await request(t, 'GET', `${API}/version`, { token });
    assertErrorB(limited, 429, 'rate_limited');
    const wait = Number(limited.headers['retry-after']);
    assert.ok(Number.isInteger(wait) && wait >= 1, `Retry-After: ${limited.headers['retry-after']}`);

    assert.equal((await request(t, 'POST', `${API}/test-connection`, { token: other })).status, 200);

    // At 2 per second, one request is allowed again after half a second: not at 0.4 s, at 0.6 s.
    ctx.mock.timers.tick(400);
    assertErrorB(await request(t, 'GET', `${API}/version`, { token }), 429, 'rate_limited');
    ctx.mock.timers.tick(200);
    assert.equal((await request(t, 'GET', `${API}/version`, { token })).status, 200);
  });
});
