/**
 * Every failure reaches the SDK's caller as a VrpError with the HTTP status, the error code
 * and the request id: the API's errors, the token endpoint's, a 429 (whose Retry-After is
 * waited out once), a network failure (with its cause) and an answer that is not the API's.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createClient, type VrpClient, VrpError } from '../../client/src/index.ts';
import { API, createTestApp, type TestApp } from '../helpers/app.ts';
import { waitUntil } from '../helpers/budget.ts';
import { testStores } from '../helpers/stores.ts';
import { baseUrlOf, sdkClient, smallOrder, watchedFetch } from './sdk.ts';

const UNKNOWN = '00000000-0000-4000-8000-000000000000';

/** Asserts that `promise` rejects with a VrpError like `want`, and answers it. */
async function vrpError(
  promise: Promise<unknown>,
  want: { status: number; errorCode: string; message?: RegExp },
): Promise<VrpError> {
  const err = await promise.then(
    () => assert.fail('expected a VrpError'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof VrpError, String(err));
  assert.equal(err.status, want.status, err.message);
  assert.equal(err.errorCode, want.errorCode, err.message);
  if (want.message) assert.match(err.message, want.message);
  return err;
}

for (const store of testStores()) {
  describe(`the SDK's errors (${store})`, () => {
    let t: TestApp;
    let vrp: VrpClient;

    before(async () => {
      t = await createTestApp({}, { store });
      vrp = await sdkClient(t);
    });
    after(() => t.close());

    test('an unknown service: 404 service_not_found with the request id', async () => {
      const err = await vrpError(vrp.details(UNKNOWN), { status: 404, errorCode: 'service_not_found' });
      assert.ok(err.requestId && err.requestId.length > 0);
      assert.equal(err.message, 'Service not found');
    });

    test("another reseller's service is not found either", async () => {
      const other = await sdkClient(t, { reseller: 'globex' });
      const [ordered] = await other.createOrder(smallOrder('theirs.example.com'));
      await vrpError(vrp.status(ordered!.service_id), { status: 404, errorCode: 'service_not_found' });
      await vrpError(vrp.terminate(ordered!.service_id), { status: 404, errorCode: 'service_not_found' });
      assert.equal((await other.status(ordered!.service_id)).status, 'pending');
    });

    test('an operation the status does not accept: 400 invalid_state naming both', async () => {
      const [ordered] = await vrp.createOrder(smallOrder('pending.example.com'));
      await vrpError(vrp.stop(ordered!.service_id), {
        status: 400,
        errorCode: 'invalid_state',
        message: /pending/,
      });
    });

    test('bad input: out_of_bounds, validation_failed, weak_password, idempotency_key_reused', async () => {
      await vrpError(vrp.createOrder({ ...smallOrder(), cpu: 999 }), {
        status: 400,
        errorCode: 'out_of_bounds',
      });
      await vrpError(vrp.createOrder({ ...smallOrder(), domain_name: 'not a host' }), {
        status: 400,
        errorCode: 'validation_failed',
      });
      await vrpError(vrp.events({ limit: 0 }), { status: 400, errorCode: 'validation_failed' });
      const [ordered] = await vrp.createOrder(smallOrder('weak.example.com'), {
        idempotencyKey: `k-${store}`,
      });
      await vrpError(vrp.resetPassword(ordered!.service_id, 'password'), {
        status: 400,
        errorCode: 'weak_password',
      });
      await vrpError(vrp.createOrder(smallOrder('other.example.com'), { idempotencyKey: `k-${store}` }), {
        status: 400,
        errorCode: 'idempotency_key_reused',
      });
    });

    test('wrong credentials: the token endpoint’s 401 invalid_client', async () => {
      const app = await t.client();
      const wrong = createClient({
        baseUrl: await baseUrlOf(t),
        clientId: app.client_id,
        clientSecret: 'nope',
      });
      const err = await vrpError(wrong.version(), { status: 401, errorCode: 'invalid_client' });
      assert.ok(err.requestId);
    });

    test('a server that is not there: network_error with the cause', async () => {
      const server = createServer();
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const { port } = server.address() as AddressInfo;
      server.close();
      await once(server, 'close');
      const gone = createClient({ baseUrl: `http://127.0.0.1:${port}/x`, clientId: 'a', clientSecret: 'b' });
      const err = await vrpError(gone.version(), {
        status: 0,
        errorCode: 'network_error',
        message: /oauth\/token.*ECONNREFUSED/,
      });
      assert.ok(err.cause instanceof Error);
      assert.equal(err.requestId, undefined);
    });

    test("an answer that is not the API's (a proxy's error page): invalid_response with its status", async () => {
      const proxy = createServer((_req, res) => {
        res
          .writeHead(502, { 'content-type': 'text/html', 'x-request-id': 'proxy-1' })
          .end('<h1>Bad gateway</h1>');
      });
      proxy.listen(0, '127.0.0.1');
      await once(proxy, 'listening');
      try {
        const { port } = proxy.address() as AddressInfo;
        const behind = createClient({
          baseUrl: `http://127.0.0.1:${port}/x`,
          clientId: 'a',
          clientSecret: 'b',
        });
        const err = await vrpError(behind.version(), { status: 502, errorCode: 'invalid_response' });
        assert.equal(err.requestId, 'proxy-1');
      } finally {
        proxy.close();
        await once(proxy, 'close');
      }
    });
  });

  describe(`the SDK and the rate limit (${store})`, () => {
    let t: TestApp;

    before(async () => {
      // One request per second per application, no burst beyond it.
      t = await createTestApp({ VRP_RATE_LIMIT: '1', VRP_RATE_BURST: '1' }, { store });
    });
    after(() => t.close());

    test('a 429 is retried once, after its Retry-After', async (ctx) => {
      const seen = watchedFetch();
      const vrp = await sdkClient(t, { fetch: seen.fetch });
      const api = () => seen.requests.filter((r) => r.path === `${API}/version`).map((r) => r.status);
      // Time moves only when the test ticks it, for the server's rate limit (Date) and for the
      // client's wait (setTimeout): the bucket does not refill between the first two requests
      // however slow the machine, and the retry comes only once the second has passed.
      ctx.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.now() });
      const waits = ctx.mock.method(globalThis, 'setTimeout');
      await vrp.version();
      const second = vrp.version();
      await waitUntil('the client to wait after the 429', () =>
        waits.mock.calls.some((c) => c.arguments[1] === 1000),
      );
      assert.deepEqual(api(), [200, 429], 'waiting out the Retry-After, not retried yet');
      ctx.mock.timers.tick(1000);
      assert.deepEqual(await second, { version: '2.0.0' });
      assert.deepEqual(api(), [200, 429, 200]);
    });

    test('a Retry-After longer than the client waits for: 429 rate_limited at once', async () => {
      const seen = watchedFetch();
      const vrp = await sdkClient(t, { fetch: seen.fetch, maxRetryAfterSeconds: 0 });
      await vrp.version();
      await vrpError(vrp.version(), { status: 429, errorCode: 'rate_limited' });
      const api = seen.requests.filter((r) => r.path === `${API}/version`).map((r) => r.status);
      assert.deepEqual(api, [200, 429]);
    });
  });
}
