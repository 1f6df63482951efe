/**
 * Property-based fuzzing of every route of docs/openapi.json (read at run time, so new routes
 * are covered): valid and broken ids, bodies, methods and headers, through app.inject and over
 * a loopback socket, on each store. Every answer must be a non-5xx in its route's format with
 * an X-Request-Id, never another reseller's data, and the server must keep working.
 *
 * Deterministic by default. VRP_FUZZ_SEED=n picks another seed, VRP_FUZZ_SCALE=k sends k times
 * as many requests, VRP_FUZZ_COLLECT=1 runs to the end and lists every distinct failure.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { API, call, createTestApp, type TestApp } from '../helpers/app.ts';
import {
  assertHeadOverLimitHasNoBody,
  assertWebhookRefused,
  REFUSED_WEBHOOK_URLS,
} from '../helpers/fuzz-corpus.ts';
import { rawRequestArb } from '../helpers/fuzz-raw-requests.ts';
import { fuzzRequestArb } from '../helpers/fuzz-requests.ts';
import { loadRoutes } from '../helpers/fuzz-routes.ts';
import { fuzzSettings, runFuzz } from '../helpers/fuzz-run.ts';
import { createFuzzWorld, type FuzzSetup } from '../helpers/fuzz-world.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { testStores } from '../helpers/stores.ts';

const routes = loadRoutes();

test('the fuzzer reads every route of the OpenAPI document', () => {
  assert.ok(routes.length >= 30, `only ${routes.length} routes`);
  for (const kind of ['api', 'token', 'metadata', 'healthz', 'readyz', 'metrics'] as const) {
    assert.ok(
      routes.some((r) => r.kind === kind),
      `no ${kind} route`,
    );
  }
});

for (const store of testStores()) {
  describe(`fuzz: every route, every answer well-formed (${store})`, () => {
    let t: TestApp;
    let setup: FuzzSetup;

    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      setup = await createFuzzWorld(t);
    });
    after(() => t.close());

    // Known cases, before the random ones: webhook receivers registration must refuse.
    for (const { url, what } of REFUSED_WEBHOOK_URLS) {
      test(`known case: a webhook at ${url} (${what}) is 400`, async () => {
        await assertWebhookRefused(t, setup.liveToken, url);
      });
    }

    test('requests through app.inject', async () => {
      await runFuzz(
        `inject (${store})`,
        fuzzRequestArb(routes, setup.world),
        async (req) => {
          const res = await t.app.inject({
            method: req.method as 'GET',
            url: req.url,
            headers: req.headers,
            payload: req.payload,
            remoteAddress: req.peer,
          });
          return { status: res.statusCode, headers: res.headers, body: res.body };
        },
        fuzzSettings(1500),
      );
    });

    test('requests over a loopback socket, parsed by Node', async () => {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (t.app.server.address() as AddressInfo).port;
      // A known case first: HEAD with a request line over 16 KB answers a head alone.
      await assertHeadOverLimitHasNoBody(port, `${API}/version`);
      await runFuzz(
        `loopback (${store})`,
        rawRequestArb(fuzzRequestArb(routes, setup.world)),
        (req) => rawRequest(port, req.peer, req.head, req.body),
        fuzzSettings(200),
      );
    });

    test('the server is still alive and serving', async () => {
      const health = await t.app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(health.statusCode, 200);
      assert.deepEqual(health.json(), { status: 'ok' });
      const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(ready.statusCode, 200);
      const version = await call(t, setup.liveToken, 'GET', `${API}/version`);
      assert.equal(version.status, 200);
      assert.equal(version.body.status, 'Success');
      const services = setup.world.ids['service_id']!.own;
      for (const id of services) {
        const status = await call(t, setup.liveToken, 'GET', `service/${id}/status`);
        assert.equal(status.status, 200, JSON.stringify(status.body));
      }
    });
  });
}
