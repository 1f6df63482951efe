import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isLoopback } from '../../src/http/https-only.ts';
import { API, BASE, createTestApp, type TestApp } from '../helpers/app.ts';

const TOKEN_URL = `${BASE}/oauth/token`;
const CONSOLE_LOGIN = '/vps_reseller_provider/console/login';
const OUTSIDE = '203.0.113.7';
const PROXY = '10.1.2.3';

/** A token request from `remoteAddress` (app.inject opens no socket: nothing leaves the process). */
async function tokenFrom(
  t: TestApp,
  remoteAddress: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const c = await t.client();
  const res = await t.app.inject({
    method: 'POST',
    url: TOKEN_URL,
    remoteAddress,
    headers,
    payload: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret },
  });
  return { status: res.statusCode, body: res.json() };
}

async function consoleFrom(t: TestApp, remoteAddress: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'GET', url: CONSOLE_LOGIN, remoteAddress, headers });
}

describe('plain http from outside loopback', () => {
  describe('refused by default', () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp();
    });
    after(() => t.close());

    test('the token endpoint answers 400 invalid_request saying to use https, and issues no token', async () => {
      const res = await tokenFrom(t, OUTSIDE);
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_request');
      assert.match(res.body.error_description, /https only/);
      assert.equal(res.body.access_token, undefined);
    });

    test('the console answers 403 https_required with a page saying to use https', async () => {
      const res = await consoleFrom(t, OUTSIDE);
      assert.equal(res.statusCode, 403);
      assert.match(String(res.headers['content-type']), /text\/html/);
      assert.match(res.body, /https only/);
      assert.doesNotMatch(res.body, /name="password"/);
    });

    test('from loopback (127.0.0.0/8, ::1, IPv4-mapped) both answer over plain http', async () => {
      for (const address of ['127.0.0.1', '127.3.4.5', '::1', '::ffff:127.0.0.1']) {
        assert.equal((await tokenFrom(t, address)).status, 200, address);
        assert.equal((await consoleFrom(t, address)).statusCode, 200, address);
      }
    });

    test('an X-Forwarded-Proto from a peer that is not a trusted proxy is not believed', async () => {
      const res = await tokenFrom(t, OUTSIDE, { 'x-forwarded-proto': 'https' });
      assert.equal(res.status, 400);
      assert.equal((await consoleFrom(t, OUTSIDE, { 'x-forwarded-proto': 'https' })).statusCode, 403);
    });

    test('the rest of the API is not refused: a bearer token from outside loopback still works', async () => {
      const token = await t.token();
      const res = await t.app.inject({
        method: 'POST',
        url: `${API}/test-connection`,
        remoteAddress: OUTSIDE,
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(res.statusCode, 200);
    });
  });

  describe('behind a trusted proxy (VRP_TRUST_PROXY)', () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ VRP_TRUST_PROXY: PROXY });
    });
    after(() => t.close());

    test('X-Forwarded-Proto: https from the proxy is allowed', async () => {
      const headers = { 'x-forwarded-for': OUTSIDE, 'x-forwarded-proto': 'https' };
      assert.equal((await tokenFrom(t, PROXY, headers)).status, 200);
      assert.equal((await consoleFrom(t, PROXY, headers)).statusCode, 200);
    });

    test('the proxy forwarding plain http (or saying nothing) is refused', async () => {
      const cases: Record<string, string>[] = [
        { 'x-forwarded-for': OUTSIDE, 'x-forwarded-proto': 'http' },
        { 'x-forwarded-for': OUTSIDE },
      ];
      for (const headers of cases) {
        assert.equal((await tokenFrom(t, PROXY, headers)).status, 400);
        assert.equal((await consoleFrom(t, PROXY, headers)).statusCode, 403);
      }
    });

    test('a client on the proxy’s own loopback is loopback, over http too', async () => {
      const headers = { 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http' };
      assert.equal((await tokenFrom(t, PROXY, headers)).status, 200);
    });
  });

  describe('VRP_ALLOW_HTTP=1', () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ VRP_ALLOW_HTTP: '1' });
    });
    after(() => t.close());

    test('plain http from outside loopback is answered', async () => {
      assert.equal((await tokenFrom(t, OUTSIDE)).status, 200);
      assert.equal((await consoleFrom(t, OUTSIDE)).statusCode, 200);
    });
  });

  test('isLoopback: 127.0.0.0/8 and ::1 only', () => {
    for (const a of ['127.0.0.1', '127.255.0.9', '::1', '::ffff:127.0.0.1']) assert.ok(isLoopback(a), a);
    for (const a of ['128.0.0.1', '10.0.0.1', '::2', '::ffff:10.0.0.1', '1127.0.0.1', 'localhost'])
      assert.ok(!isLoopback(a), a);
  });
});
