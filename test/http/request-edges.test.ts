/**
 * Kept fixed: what the fuzz test (fuzz.test.ts) found besides the defects other tests pin,
 * each pinned by a plain request: deeply nested JSON, X-Envelope-Variant on routes without an
 * envelope, a wrong method that sends a body, a request target in absolute form.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../../src/http/app.ts';
import { jsonDepthExceeds } from '../../src/http/json-depth.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { API, BASE, call, createTestApp, type TestApp } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { testStores } from '../helpers/stores.ts';

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

test('JSON depth is counted in one pass, brackets inside strings aside', () => {
  assert.equal(jsonDepthExceeds(nested(64)), false);
  assert.equal(jsonDepthExceeds(nested(65)), true);
  assert.equal(jsonDepthExceeds(`{"a":"${'['.repeat(500)}"}`), false);
  assert.equal(jsonDepthExceeds(`{"a":"\\"${'{'.repeat(500)}"}`), false);
  assert.equal(jsonDepthExceeds(nested(100_000)), true);
});

for (const store of testStores()) {
  describe(`request edges (${store})`, () => {
    let t: TestApp;
    let token: string;
    let tokenA: string;
    let serviceId: string;
    before(async () => {
      t = await createTestApp({}, { store });
      token = await t.token();
      tokenA = await t.token({ variant: 'A' });
      const order = await call(t, token, 'POST', 'service/create-order', smallOrder('edges.example.com'));
      serviceId = order.body.data[0].service_id;
    });
    after(() => t.close());

    test('a body nested thousands deep is 400 validation_failed, never a 500 (Idempotency-Key too)', async () => {
      const p = DEMO_CATALOG.products[0]!;
      const base = `"product_id":"${p.id}","domain_name":"deep.example.com","template_id":"${p.os_templates[0]}","cpu":1,"ram":1,"hdd":20,"ip":1,"backup":10`;
      for (const [path, body, headers] of [
        ['service/create-order', `{${base},"deep":${nested(20_000)}}`, { 'idempotency-key': 'deep-1' }],
        [`service/${serviceId}/suspend`, `{"suspend_reason":"x","deep":${nested(20_000)}}`, {}],
        ['test-connection', nested(100), {}],
      ] as const) {
        const res = await t.app.inject({
          method: 'POST',
          url: `${API}/${path}`,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
          payload: body,
        });
        assert.equal(res.statusCode, 400, `${path}: ${res.body}`);
        assert.equal(res.json().error_code, 'validation_failed');
        assert.match(res.json().message, /nested deeper than 64/);
      }
      // 64 levels are still read (and then judged by the route as usual).
      const ok = await call(t, token, 'POST', 'test-connection', JSON.parse(`{"x":${nested(63)}}`));
      assert.equal(ok.status, 200);
    });

    test('probes, metrics and the OAuth metadata ignore X-Envelope-Variant; the API refuses a bad one', async () => {
      for (const url of [
        '/healthz',
        '/readyz',
        '/metrics',
        '/.well-known/oauth-authorization-server/vps_reseller_provider/public',
      ]) {
        const res = await t.app.inject({ method: 'GET', url, headers: { 'x-envelope-variant': 'AB' } });
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
        assert.doesNotMatch(res.body, /invalid_envelope_variant/);
      }
      const api = await call(t, token, 'GET', 'version', undefined, { 'x-envelope-variant': 'AB' });
      assert.equal(api.status, 400);
      assert.equal(api.body.error_code, 'invalid_envelope_variant');
      // A path no route has: 404 (not 400), in the envelope of the token's application.
      const none = await call(t, tokenA, 'GET', 'nothing-here', undefined, { 'x-envelope-variant': 'AB' });
      assert.equal(none.status, 404);
      assert.equal(none.body.success, 'false');
      assert.equal(none.body.error_code, 'not_found');
    });

    test('a wrong method is 405 whatever body it sends (too large, not JSON, not storable)', async () => {
      const auth = { authorization: `Bearer ${tokenA}` };
      for (const [method, url, type, payload] of [
        [
          'PUT',
          `${API}/service/${serviceId}/details`,
          'application/json',
          `{"p":"${'x'.repeat(1_100_000)}"}`,
        ],
        ['PATCH', `${API}/service/${serviceId}/stop`, 'application/json', '{"service_id":"\\u0000"}'],
        ['DELETE', `${API}/products`, 'application/json', 'not json'],
        ['PUT', `${API}/version`, 'multipart/form-data; boundary=x', '--x--'],
        ['PATCH', '/metrics', 'application/json', '{"deep":1'],
      ] as const) {
        const res = await t.app.inject({ method, url, headers: { ...auth, 'content-type': type }, payload });
        assert.equal(res.statusCode, 405, `${method} ${url}: ${res.body.slice(0, 200)}`);
        assert.equal(res.json().error_code, 'method_not_allowed');
        assert.ok(res.headers['allow']);
      }
    });
  });
}

describe('a request target in absolute form (real HTTP over loopback)', () => {
  let t: TestApp;
  let port: number;
  const server = { app: undefined as ReturnType<typeof buildApp> | undefined };
  before(async () => {
    t = await createTestApp();
    server.app = buildApp(t.ctx, { logger: false });
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    port = (server.app.server.address() as { port: number }).port;
  });
  after(async () => {
    await server.app?.close();
    await t.close();
  });

  test('is routed like its path: a wrong method is 405 with Allow, not 404', async () => {
    const res = await rawRequest(
      port,
      '127.0.0.1',
      Buffer.from(
        `DELETE http://127.0.0.1${BASE}/api/v2/version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close`,
      ),
      Buffer.alloc(0),
    );
    assert.equal(res.status, 405, res.body);
    assert.equal(res.headers['allow'], 'GET');
    assert.equal(JSON.parse(res.body).error_code, 'method_not_allowed');
  });
});
