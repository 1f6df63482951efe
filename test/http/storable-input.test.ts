/**
 * Text a store cannot hold (U+0000, a lone surrogate) is refused where it
 * enters, in any body field or key, query parameter or path parameter, with 400
 * validation_failed naming it; before, PostgreSQL accepted a suspend_reason with U+0000 and
 * then retried the suspension job for ever.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RESOURCES } from '../../src/domain/catalog.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { API, BASE, call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const product = DEMO_CATALOG.products[0]!;
// The smallest order the product takes (at least 10 GB of backup space).
const order = {
  product_id: product.id,
  domain_name: 'nul.example.com',
  template_id: product.os_templates[0],
  ...Object.fromEntries(RESOURCES.map((r) => [r, Number(product.config[r].min)])),
  backup: Math.max(10, Number(product.config.backup.min)),
};

/** Sends `json` as given (JSON text may hold escapes JSON.stringify would not write). */
async function post(t: TestApp, token: string, path: string, json: string) {
  const res = await t.app.inject({
    method: 'POST',
    url: `${API}/${path}`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: json,
  });
  return { status: res.statusCode, body: res.json() };
}

function assertRefused(res: { status: number; body: any }, field: string): void {
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.equal(res.body.error_code, 'validation_failed');
  assert.ok(res.body.message.includes(field), `the message names ${field}: ${res.body.message}`);
}

for (const store of testStores()) {
  describe(`text no store can hold is refused at the door (${store})`, () => {
    let t: TestApp;
    let token: string;
    let serviceId: string;
    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      token = await t.token();
      const ordered = await call(t, token, 'POST', 'service/create-order', order);
      serviceId = ordered.body.data[0].service_id;
      await call(t, token, 'POST', `service/${serviceId}/create`);
      await waitForStatus(t, token, serviceId, 'running');
    });
    after(() => t.close());

    test('a suspend_reason with U+0000 is 400 and the service stays running with no job', async () => {
      const res = await post(
        t,
        token,
        `service/${serviceId}/suspend`,
        '{"suspend_reason":"late\\u0000payer"}',
      );
      assertRefused(res, 'body.suspend_reason');
      const status = await call(t, token, 'GET', `service/${serviceId}/status`);
      assert.equal(status.body.data.status, 'running');
      assert.equal(status.body.data.job, null);
      // A clean reason still works.
      const ok = await call(t, token, 'POST', `service/${serviceId}/suspend`, {
        suspend_reason: 'late payer',
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      await waitForStatus(t, token, serviceId, 'suspended');
      assert.equal((await call(t, token, 'POST', `service/${serviceId}/unsuspend`)).status, 200);
      await waitForStatus(t, token, serviceId, 'running');
    });

    test('a lone surrogate in a body field, and a bad key, are refused by name', async () => {
      const lone = await post(
        t,
        token,
        'service/create-order',
        JSON.stringify({ ...order, domain_name: 'x' }).replace('"x"', '"a\\ud800.example.com"'),
      );
      assertRefused(lone, 'body.domain_name');
      const key = await post(t, token, `service/${serviceId}/suspend`, '{"bad\\u0000key":"x"}');
      assertRefused(key, 'body.bad\\u0000key');
    });

    test('query and path parameters are checked too', async () => {
      const query = await call(t, token, 'GET', `service/${serviceId}/jobs?note=%00`);
      assertRefused(query, 'query.note');
      const path = await call(t, token, 'GET', `service/%00/status`);
      assertRefused(path, 'params.service_id');
    });

    test('the token endpoint answers it with an RFC 6749 error, never a 500', async () => {
      // The token endpoint stores nothing it is sent. A client_id no client can have is a failed
      // authentication that the guessing throttle counts (test/http/oauth.test.ts); any other
      // field holding such text is refused as that field's own OAuth error.
      const cases: [string, number, string][] = [
        ['grant_type=client_credentials&client_id=vrp_%00&client_secret=x', 401, 'invalid_client'],
        ['grant_type=client_credentials%00&client_id=vrp_x&client_secret=x', 401, 'invalid_client'],
      ];
      for (const [payload, status, error] of cases) {
        const res = await t.app.inject({
          method: 'POST',
          url: `${BASE}/oauth/token`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload,
          remoteAddress: `127.0.0.${cases.findIndex((c) => c[0] === payload) + 20}`,
        });
        assert.equal(res.statusCode, status, res.body);
        assert.equal(res.json().error, error, res.body);
      }
      const c = await t.client();
      const badScope = await t.app.inject({
        method: 'POST',
        url: `${BASE}/oauth/token`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=client_credentials&client_id=${c.client_id}&client_secret=${c.client_secret}&scope=access%00`,
      });
      assert.equal(badScope.statusCode, 400, badScope.body);
      assert.equal(badScope.json().error, 'invalid_scope');
    });
  });
}
