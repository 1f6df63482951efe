/**
 * The operator API takes exactly the body keys a route names: an unknown one (a typo) is 400
 * validation_failed naming it, on every route with a body, and nothing changes. The reseller
 * API, which shares some of these bodies, keeps ignoring keys it does not know.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OPERATOR_SCOPE } from '../../../src/domain/scopes.ts';
import { call, createTestApp, type TestApp } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { OPS, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const MISSING = '00000000-0000-4000-8000-000000000000';

function concrete(url: string): string {
  return url.replace(/:([a-z_]+)/g, (_m, name: string) => (name === 'host_id' ? 'sim-host-1' : MISSING));
}

for (const store of testStores()) {
  describe(`operator API: unknown body keys are 400 (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let acme: string;
    let resellerId: string;

    before(async () => {
      t = await createTestApp({}, { store });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
      const created = await opsCall(t, ops, 'POST', 'resellers', { name: 'typo-reseller' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      resellerId = created.body.data.reseller_id;
    });
    after(() => t.close());

    test('every operator route with a body refuses a key it does not know', async () => {
      const routes = t.app.registeredRoutes.filter(
        (r) =>
          r.scope === OPERATOR_SCOPE &&
          r.method !== 'GET' &&
          r.method !== 'HEAD' &&
          r.url.startsWith(`${OPS}/`),
      );
      assert.ok(routes.length >= 20, `${routes.length} operator routes with a body`);
      for (const route of routes) {
        const res = await t.app.inject({
          method: route.method as 'POST' | 'PUT' | 'PATCH',
          url: concrete(route.url),
          headers: { authorization: `Bearer ${ops}`, 'content-type': 'application/json' },
          payload: '{"bogus_key":1}',
        });
        const label = `${route.method} ${route.url}`;
        assert.equal(res.statusCode, 400, `${label}: ${res.body}`);
        assert.equal(res.json().error_code, 'validation_failed', label);
        // A required key that is missing is named first; otherwise the unknown one is.
        const required = (route.schema?.body as { required?: string[] } | undefined)?.required ?? [];
        if (required.length === 0) assert.equal(res.json().message, 'bogus_key is not a known field', label);
      }
    });

    test('PUT quota with a typo is 400 and keeps the caps', async () => {
      const set = await opsCall(t, ops, 'PUT', `resellers/${resellerId}/quota`, { services: 2, cpu: 4 });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      for (const typo of [{ gpu: 1 }, { cpus: 40 }, { services: 3, Cpu: 8 }]) {
        const res = await opsCall(t, ops, 'PUT', `resellers/${resellerId}/quota`, typo);
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.error_code, 'validation_failed');
        assert.match(res.body.message, /^(gpu|cpus|Cpu) is not a known field$/);
      }
      const got = await opsCall(t, ops, 'GET', `resellers/${resellerId}`);
      assert.equal(got.body.data.quota.services, 2, 'the caps stay');
      assert.equal(got.body.data.quota.cpu, 4);
    });

    test('the reseller API still ignores keys it does not know', async () => {
      const order = await call(t, acme, 'POST', 'service/create-order', {
        ...smallOrder('keys.example.com'),
        extra: 1,
      });
      assert.equal(order.status, 200, JSON.stringify(order.body));
    });
  });
}
