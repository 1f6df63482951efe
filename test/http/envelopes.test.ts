/**
 * Every answer of the server is in the envelope of the variant the request
 * names or implies, with an error_code and X-Request-Id, whatever produced it (auth, router,
 * Fastify before routing, Node's HTTP parser, shutdown); the API reads JSON only.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { RegisteredApplication } from '../../src/auth/applications.ts';
import { buildApp } from '../../src/http/app.ts';
import { revokeClientTokens } from '../../src/store/repos/clients.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { API, BASE, createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: any;
}

async function send(
  t: TestApp,
  method: 'GET' | 'POST' | 'DELETE' | 'PUT',
  url: string,
  headers: Record<string, string> = {},
  payload?: string,
): Promise<Answer> {
  const res = await t.app.inject({ method, url, headers, payload });
  return { status: res.statusCode, headers: res.headers, body: res.json() };
}

/** An error answer in `variant`'s envelope, exactly its keys, with an X-Request-Id. */
function assertError(variant: 'A' | 'B', res: Answer, status: number, code: string): void {
  const flag = variant === 'A' ? 'success' : 'status';
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.deepEqual(
    Object.keys(res.body).sort(),
    ['data', 'error_code', 'message', flag].sort(),
    JSON.stringify(res.body),
  );
  assert.equal(res.body[flag], variant === 'A' ? 'false' : 'Error');
  assert.deepEqual(res.body.data, variant === 'A' ? '[]' : []);
  assert.equal(res.body.error_code, code);
  assert.ok(res.body.message.length > 0);
  assert.match(String(res.headers['x-request-id']), /^[A-Za-z0-9._:-]+$/);
}
const assertA = (res: Answer, status: number, code: string) => assertError('A', res, status, code);
const assertB = (res: Answer, status: number, code: string) => assertError('B', res, status, code);

/** Sends raw bytes over loopback and parses the one answer (status, headers, JSON body). */
async function raw(port: number, bytes: string): Promise<Answer> {
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(bytes));
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d) => {
      out += d;
    });
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
  const [head = '', body = ''] = text.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

for (const store of testStores()) {
  describe(`a variant-A application gets variant A on every answer (${store})`, () => {
    let t: TestApp;
    let appA: RegisteredApplication;
    let tokenA: string;
    let tokenB: string;
    before(async () => {
      t = await createTestApp({}, { store });
      appA = await t.client({ variant: 'A' });
      tokenA = await t.token({ client: appA });
      tokenB = await t.token();
    });
    after(() => t.close());

    test('an expired token of an A application: 401 in variant A', async () => {
      const reseller = await findResellerByName(t.ctx.store.db, 'acme');
      const expired = t.ctx.signer.issue({
        clientId: appA.client_id,
        resellerId: reseller!.id,
        scopes: ['access'],
        version: 1,
        exp: Math.floor(Date.now() / 1000) - 1,
      });
      const res = await send(t, 'GET', `${API}/version`, { authorization: `Bearer ${expired}` });
      assertA(res, 401, 'invalid_token');
      assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
    });

    test('a revoked token of an A application: 401 in variant A', async () => {
      const c = await t.client({ variant: 'A' });
      const token = await t.token({ client: c });
      await revokeClientTokens(t.ctx.store.db, c.client_id, Date.now());
      t.ctx.clientStates.invalidate(c.client_id);
      assertA(
        await send(t, 'GET', `${API}/version`, { authorization: `Bearer ${token}` }),
        401,
        'invalid_token',
      );
    });

    test('unknown path (404) and wrong method (405) with an A token: variant A', async () => {
      const auth = { authorization: `Bearer ${tokenA}` };
      assertA(await send(t, 'GET', `${API}/nothing-here`, auth), 404, 'not_found');
      const del = await send(t, 'DELETE', `${API}/version`, auth);
      assertA(del, 405, 'method_not_allowed');
      assert.equal(del.headers['allow'], 'GET');
    });

    test('an invalid X-Envelope-Variant with an A token is refused in variant A', async () => {
      const res = await send(t, 'GET', `${API}/version`, {
        authorization: `Bearer ${tokenA}`,
        'x-envelope-variant': 'C',
      });
      assertA(res, 400, 'invalid_envelope_variant');
    });

    test('the header still wins, and B applications and unknown callers get B', async () => {
      assertB(
        await send(t, 'GET', `${API}/nothing-here`, {
          authorization: `Bearer ${tokenA}`,
          'x-envelope-variant': 'B',
        }),
        404,
        'not_found',
      );
      assertA(
        await send(t, 'DELETE', `${API}/version`, {
          authorization: `Bearer ${tokenB}`,
          'x-envelope-variant': 'A',
        }),
        405,
        'method_not_allowed',
      );
      assertB(
        await send(t, 'GET', `${API}/nothing-here`, { authorization: `Bearer ${tokenB}` }),
        404,
        'not_found',
      );
      assertB(
        await send(t, 'GET', `${API}/nothing-here`, { authorization: 'Bearer vrp1.forged.sig' }),
        404,
        'not_found',
      );
      assertB(await send(t, 'GET', `${API}/version`), 401, 'invalid_token');
    });

    test('errors Fastify meets before routing: enveloped, in the caller variant, with X-Request-Id', async () => {
      const auth = { authorization: `Bearer ${tokenA}`, 'x-request-id': 'framework-1' };
      const long = await send(t, 'GET', `${API}/service/${'a'.repeat(201)}/status`, auth);
      assertA(long, 404, 'not_found');
      assert.equal(long.headers['x-request-id'], 'framework-1');
      const badUtf8 = await send(t, 'GET', `${API}/service/%ff/status`, auth);
      assertA(badUtf8, 400, 'validation_failed');
      assert.equal(badUtf8.headers['x-request-id'], 'framework-1');
      assertB(await send(t, 'GET', `${API}/service/%ff/status`), 400, 'validation_failed');
    });
  });
}

describe('answers produced outside the routes (real HTTP over loopback)', () => {
  let t: TestApp;
  let port: number;
  let tokenA: string;
  const app = { current: undefined as ReturnType<typeof buildApp> | undefined };
  before(async () => {
    t = await createTestApp();
    tokenA = await t.token({ variant: 'A' });
    app.current = buildApp(t.ctx, { logger: false });
    await app.current.listen({ host: '127.0.0.1', port: 0 });
    port = (app.current.server.address() as { port: number }).port;
  });
  after(async () => {
    await app.current?.close();
    await t.close();
  });

  test('a path that is not UTF-8 or escapes its segment: envelope, not FST_ERR_BAD_URL', async () => {
    for (const path of ['/service/%ff/status', '/service/..%2F..%2F%c0/status']) {
      const res = await raw(
        port,
        `GET ${API}${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tokenA}\r\nConnection: close\r\n\r\n`,
      );
      assertA(res, 400, 'validation_failed');
    }
  });

  test('a request Node cannot parse: 400 envelope with X-Request-Id', async () => {
    assertB(await raw(port, 'BROKEN\r\n\r\n'), 400, 'validation_failed');
  });

  test('headers larger than Node accepts: 431 envelope', async () => {
    const res = await raw(
      port,
      `GET ${API}/version HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assertB(res, 431, 'headers_too_large');
  });
});

describe('a request that arrives while the server shuts down', () => {
  test('503 shutting_down in the envelope, with X-Request-Id and Connection: close', async () => {
    const t = await createTestApp();
    const app = buildApp(t.ctx, { logger: false });
    let during: Answer | undefined;
    // Runs after the app's own preClose hook, while the server still listens.
    app.addHook('preClose', async () => {
      const port = (app.server.address() as { port: number }).port;
      during = await raw(port, `GET ${API}/version HTTP/1.1\r\nHost: x\r\nX-Envelope-Variant: A\r\n\r\n`);
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    await app.close();
    await t.close();
    assert.ok(during);
    assertA(during, 503, 'shutting_down');
    assert.equal(during.headers['connection'], 'close');
  });
});

for (const store of testStores()) {
  describe(`the API reads JSON only; forms only on the token endpoint (${store})`, () => {
    let t: TestApp;
    let tokenA: string;
    before(async () => {
      t = await createTestApp({}, { store });
      tokenA = await t.token({ variant: 'A' });
    });
    after(() => t.close());

    test('text/plain and form bodies on API routes are 415 unsupported_media_type', async () => {
      const auth = { authorization: `Bearer ${tokenA}` };
      const cases: [string, string, string][] = [
        ['test-connection', 'text/plain', 'hello'],
        ['service/create-order', 'application/x-www-form-urlencoded', 'product_id=x&cpu=1'],
        ['service/create-order', 'text/plain', '{"product_id":"x"}'],
        ['test-connection', 'application/xml', '<a/>'],
      ];
      for (const [path, type, payload] of cases) {
        assertA(
          await send(t, 'POST', `${API}/${path}`, { ...auth, 'content-type': type }, payload),
          415,
          'unsupported_media_type',
        );
      }
    });

    test('an empty body of any type is no body', async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json']) {
        const res = await send(
          t,
          'POST',
          `${API}/test-connection`,
          { authorization: `Bearer ${tokenA}`, 'content-type': type },
          '',
        );
        assert.equal(res.status, 200, `${type}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.success, 'true');
      }
    });

    test('the token endpoint takes forms and JSON; another type is 415 with an RFC 6749 body', async () => {
      const c = await t.client();
      const form = new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: c.client_id,
        client_secret: c.client_secret,
      }).toString();
      const ok = await send(
        t,
        'POST',
        `${BASE}/oauth/token`,
        { 'content-type': 'application/x-www-form-urlencoded' },
        form,
      );
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      const plain = await send(t, 'POST', `${BASE}/oauth/token`, { 'content-type': 'text/plain' }, form);
      assert.equal(plain.status, 415);
      assert.deepEqual(Object.keys(plain.body).sort(), ['error', 'error_description']);
      assert.equal(plain.body.error, 'invalid_request');
      assert.equal(plain.headers['cache-control'], 'no-store');
    });
  });
}
