/**
 * VRP_CORS_ORIGINS: a page of a listed origin may call the reseller API from a browser (the
 * SDK in a billing panel). Preflights are answered before authentication and the rate limit;
 * answers carry the headers the SDK reads; other origins, and the operator API and console,
 * get no CORS header at all.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { CONSOLE, OPS } from '../../src/http/base-path.ts';
import { API, BASE, createTestApp, type TestApp } from '../helpers/app.ts';
import { operatorToken } from '../helpers/operator.ts';

const PANEL = 'https://panel.example.com';
const OTHER = 'https://evil.example.net';

/** What a browser sends before a cross-origin POST with the SDK's headers. */
function preflight(t: TestApp, url: string, origin: string, method = 'POST') {
  return t.app.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization,content-type,idempotency-key,x-envelope-variant',
      'user-agent': 'Mozilla/5.0',
      accept: '*/*',
      'sec-fetch-mode': 'cors',
    },
  });
}

const corsHeaders = (res: LightMyRequestResponse) =>
  Object.keys(res.headers).filter((h) => h.startsWith('access-control-'));

const list = (value: unknown) =>
  String(value ?? '')
    .split(',')
    .map((v) => v.trim().toLowerCase())
    .filter(Boolean);

describe('CORS for the reseller API (VRP_CORS_ORIGINS)', () => {
  let t: TestApp;
  before(async () => {
    // A rate limit of one request a second with no burst: the preflights must not count, nor be refused.
    t = await createTestApp({
      VRP_CORS_ORIGINS: `${PANEL},http://127.0.0.1:5173`,
      VRP_RATE_LIMIT: '1',
      VRP_RATE_BURST: '1',
    });
  });
  after(() => t.close());

  test("a browser's preflight of an API call: 204 with the origin, methods, the SDK's headers, max age", async () => {
    for (const url of [`${API}/service/create-order`, `${BASE}/oauth/token`, `${API}/version`]) {
      const res = await preflight(t, url, PANEL);
      assert.equal(res.statusCode, 204, `${url}: ${res.body}`);
      assert.equal(res.body, '');
      assert.equal(res.headers['access-control-allow-origin'], PANEL);
      assert.deepEqual(list(res.headers['access-control-allow-methods']), ['get', 'head', 'post']);
      const allowed = list(res.headers['access-control-allow-headers']);
      for (const h of [
        'authorization',
        'content-type',
        'idempotency-key',
        'x-envelope-variant',
        'x-request-id',
      ])
        assert.ok(allowed.includes(h), `${h} in ${allowed}`);
      assert.equal(res.headers['access-control-max-age'], '7200');
      assert.ok(list(res.headers.vary).includes('origin'), String(res.headers.vary));
      assert.equal(res.headers['access-control-allow-credentials'], undefined, 'bearer tokens, no cookies');
    }
    const other = await preflight(t, `${API}/version`, 'http://127.0.0.1:5173', 'GET');
    assert.equal(other.headers['access-control-allow-origin'], 'http://127.0.0.1:5173');
  });

  test('answers to a listed origin carry the origin and expose the headers the SDK reads', async () => {
    const token = await t.token();
    const res = await t.app.inject({
      method: 'GET',
      url: `${API}/version`,
      headers: { origin: PANEL, authorization: `Bearer ${token}`, 'x-envelope-variant': 'B' },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['access-control-allow-origin'], PANEL);
    const exposed = list(res.headers['access-control-expose-headers']);
    for (const h of ['retry-after', 'x-request-id', 'x-job-id', 'idempotent-replayed', 'www-authenticate'])
      assert.ok(exposed.includes(h), `${h} in ${exposed}`);
    assert.ok(list(res.headers.vary).includes('origin'));

    // Errors too, or the page could not read them: a refused token, and the rate limit's 429
    // with its Retry-After; the preflights between them are neither refused nor counted.
    const noToken = await t.app.inject({ method: 'GET', url: `${API}/version`, headers: { origin: PANEL } });
    assert.equal(noToken.statusCode, 401);
    assert.equal(noToken.headers['access-control-allow-origin'], PANEL);
    assert.ok(list(noToken.headers['access-control-expose-headers']).includes('www-authenticate'));
    const limited = await t.app.inject({
      method: 'GET',
      url: `${API}/version`,
      headers: { origin: PANEL, authorization: `Bearer ${token}` },
    });
    assert.equal(limited.statusCode, 429, limited.body);
    assert.ok(limited.headers['retry-after']);
    assert.equal(limited.headers['access-control-allow-origin'], PANEL);
    assert.ok(list(limited.headers['access-control-expose-headers']).includes('retry-after'));
    for (let i = 0; i < 5; i++) {
      const res = await preflight(t, `${API}/version`, PANEL, 'GET');
      assert.equal(res.statusCode, 204);
    }
  });

  test('an origin not listed gets no CORS header: its preflight is 405, its answers plain', async () => {
    const pre = await preflight(t, `${API}/version`, OTHER, 'GET');
    assert.equal(pre.statusCode, 405);
    assert.equal(pre.json().error_code, 'method_not_allowed');
    assert.deepEqual(corsHeaders(pre), []);
    const res = await t.app.inject({ method: 'GET', url: `${API}/version`, headers: { origin: OTHER } });
    assert.equal(res.statusCode, 401);
    assert.deepEqual(corsHeaders(res), []);
    // Near misses of a listed origin are other origins.
    for (const near of [
      `${PANEL}:443`,
      'http://panel.example.com',
      'https://panel.example.com.evil.net',
      'null',
    ]) {
      assert.deepEqual(corsHeaders(await preflight(t, `${API}/version`, near, 'GET')), [], near);
    }
  });

  test('an OPTIONS that asks for no method is no preflight: 405 as before', async () => {
    const res = await t.app.inject({ method: 'OPTIONS', url: `${API}/version`, headers: { origin: PANEL } });
    assert.equal(res.statusCode, 405);
    assert.equal(res.json().error_code, 'method_not_allowed');
    assert.deepEqual(corsHeaders(res), []);
  });

  test('the operator API and the console get no CORS, even for a listed origin', async () => {
    for (const url of [`${OPS}/hosts`, `${OPS}/whoami`, `${CONSOLE}/login`]) {
      const pre = await preflight(t, url, PANEL, 'GET');
      assert.notEqual(pre.statusCode, 204, url);
      assert.deepEqual(corsHeaders(pre), [], url);
    }
    const ops = await operatorToken(t);
    const res = await t.app.inject({
      method: 'GET',
      url: `${OPS}/hosts`,
      headers: { origin: PANEL, authorization: `Bearer ${ops}` },
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(corsHeaders(res), []);
  });
});

describe('CORS off (the default)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('no preflight is answered and no answer carries a CORS header', async () => {
    const pre = await preflight(t, `${API}/version`, PANEL, 'GET');
    assert.equal(pre.statusCode, 405);
    assert.deepEqual(corsHeaders(pre), []);
    const res = await t.app.inject({ method: 'GET', url: `${API}/version`, headers: { origin: PANEL } });
    assert.deepEqual(corsHeaders(res), []);
    assert.equal(res.headers.vary, undefined);
  });
});
