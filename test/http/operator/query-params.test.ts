/**
 * The operator API takes exactly the query parameters a route names, each once: an unknown
 * filter, PHP's array form (`reseller_id[]=x`) or a repeated parameter is 400 validation_failed
 * naming it, on every route, never a filter quietly ignored. The reseller API keeps ignoring
 * parameters it does not take (docs/api.md: billing modules send extras), and refuses a
 * parameter it takes given twice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OPERATOR_SCOPE } from '../../../src/domain/scopes.ts';
import { call, createTestApp, type TestApp } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { OPS, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const MISSING = '00000000-0000-4000-8000-000000000000';

/** A route's URL with its path parameters filled in: ids that name nothing, a configured host. */
function concrete(url: string): string {
  return url.replace(/:([a-z_]+)/g, (_m, name: string) => (name === 'host_id' ? 'sim-host-1' : MISSING));
}

for (const store of testStores()) {
  describe(`operator API: unknown, array-form and repeated query parameters are 400 (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let acme: string;
    let serviceId: string;

    before(async () => {
      t = await createTestApp({}, { store });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
      const ordered = await call(t, acme, 'POST', 'service/create-order', smallOrder('q.example.com'), {
        'x-envelope-variant': 'B',
      });
      serviceId = ordered.body.data[0].service_id;
    });
    after(() => t.close());

    test('every operator route refuses a parameter it does not take; GETs name it', async () => {
      const routes = t.app.registeredRoutes.filter(
        (r) => r.scope === OPERATOR_SCOPE && r.method !== 'HEAD' && r.url.startsWith(`${OPS}/`),
      );
      assert.ok(routes.length >= 20, `${routes.length} operator routes`);
      for (const route of routes) {
        const url = `${concrete(route.url)}?bogus_filter=1`;
        const res = await t.app.inject({
          method: route.method as 'GET' | 'POST' | 'PUT',
          url,
          headers: {
            authorization: `Bearer ${ops}`,
            ...(route.method === 'GET' ? {} : { 'content-type': 'application/json' }),
          },
          ...(route.method === 'GET' ? {} : { payload: '{}' }),
        });
        const label = `${route.method} ${route.url}`;
        assert.equal(res.statusCode, 400, `${label}: ${res.body}`);
        assert.equal(res.json().error_code, 'validation_failed', label);
        // A POST's body is checked first, and a missing required parameter before an unknown
        // one (usage's period): those are refused for what they lack.
        const required = (route.schema?.querystring as { required?: string[] } | undefined)?.required ?? [];
        if (route.method === 'GET' && required.length === 0)
          assert.match(res.json().message, /bogus_filter/, label);
      }
    });

    test('array form and unknown filters on the lists name the parameter', async () => {
      for (const [path, name] of [
        ['services?reseller_id[]=x', 'reseller_id[]'],
        ['services?reseller_id%5B%5D=x', 'reseller_id[]'],
        ['services?status[0]=running', 'status[0]'],
        ['services?owner=acme', 'owner'],
        ['jobs?service_id[]=x', 'service_id[]'],
        ['jobs?state=failed', 'state'],
        ['resellers?name=acme', 'name'],
        ['hosts?state=active', 'state'],
        ['audit?action=service.order&verb=start', 'verb'],
        [`usage?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z&reseller=acme`, 'reseller'],
        ['overview?x=1', 'x'],
        ['whoami?x=1', 'x'],
        [`services/${MISSING}?show_password=true`, 'show_password'],
      ]) {
        const res = await opsCall(t, ops, 'GET', path!);
        assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error_code, 'validation_failed', path);
        assert.equal(res.body.message, `query parameter ${name} is not one this route takes`, path);
      }
    });

    test('limit is an integer: in the OpenAPI document, and read from the query string as one', async () => {
      const doc = (await t.app.inject({ method: 'GET', url: `${OPS}/openapi.json` })).json();
      const limit = doc.paths[`${OPS}/services`].get.parameters.find(
        (p: { name: string }) => p.name === 'limit',
      );
      assert.deepEqual(
        { type: limit.schema.type, minimum: limit.schema.minimum, maximum: limit.schema.maximum },
        { type: 'integer', minimum: 1, maximum: 1000 },
      );
      const one = await opsCall(t, ops, 'GET', 'services?limit=1');
      assert.equal(one.status, 200, JSON.stringify(one.body));
      assert.equal(one.body.data.items.length, 1);
      for (const [q, message] of [
        ['limit=abc', 'limit must be integer'],
        ['limit=1.5', 'limit must be integer'],
        ['limit=0', 'limit must be >= 1'],
        ['limit=1001', 'limit must be <= 1000'],
      ]) {
        const res = await opsCall(t, ops, 'GET', `resellers?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, 'validation_failed', q);
        assert.equal(res.body.message, message, q);
      }
    });

    test('usage takes no format parameter: CSV is asked for with Accept, format=csv is 400', async () => {
      const period = 'from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z';
      const res = await opsCall(t, ops, 'GET', `usage?${period}&format=csv`);
      assert.equal(res.status, 400);
      assert.equal(res.body.message, 'query parameter format is not one this route takes');
    });

    test('a parameter given twice is 400 naming it', async () => {
      for (const [path, name] of [
        ['services?status=running&status=failed', 'status'],
        [`services?reseller_id=${MISSING}&reseller_id=${MISSING}`, 'reseller_id'],
        ['jobs?status=failed&status=queued', 'status'],
        ['resellers?limit=1&limit=2', 'limit'],
        ['audit?actor=cli&actor=operator', 'actor'],
      ]) {
        const res = await opsCall(t, ops, 'GET', path!);
        assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error_code, 'validation_failed', path);
        assert.equal(res.body.message, `query parameter ${name} is given more than once`, path);
      }
    });

    test('the parameters a route takes still filter; HEAD is refused the same, without a body', async () => {
      const res = await opsCall(t, ops, 'GET', `services?reseller_id=${MISSING}&status=pending&limit=5`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data.items, []);
      const mine = await opsCall(t, ops, 'GET', 'services?status=pending&q=q.example.com');
      assert.deepEqual(
        mine.body.data.items.map((s: any) => s.service_id),
        [serviceId],
      );
      const head = await t.app.inject({
        method: 'HEAD',
        url: `${OPS}/services?reseller_id[]=x`,
        headers: { authorization: `Bearer ${ops}` },
      });
      assert.equal(head.statusCode, 400);
      assert.equal(head.body, '');
    });

    test('the reseller API ignores parameters it does not take, and refuses one it takes given twice', async () => {
      const B = { 'x-envelope-variant': 'B' };
      const ignored = await call(
        t,
        acme,
        'GET',
        `service/${serviceId}/jobs?limit=5&cachebust=1&x[]=2`,
        undefined,
        B,
      );
      assert.equal(ignored.status, 200, JSON.stringify(ignored.body));
      const twice = await call(t, acme, 'GET', `service/${serviceId}/jobs?limit=1&limit=2`, undefined, B);
      assert.equal(twice.status, 400);
      assert.equal(twice.body.error_code, 'validation_failed');
      assert.match(twice.body.message, /limit/);
    });
  });
}
