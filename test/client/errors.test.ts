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
import { mockSetTimeout } from '../helpers/mock-timeout.ts';
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

    test("a wrong base URL on the provider's host: the server's 404 not_found and its message", async () => {
      const app = await t.client();
      const wrong = createClient({
        baseUrl: (await baseUrlOf(t)).replace(/\/public$/, '/wrong'),
        clientId: app.client_id,
        clientSecret: app.client_secret,
      });
      const err = await vrpError(wrong.version(), {
        status: 404,
        errorCode: 'not_found',
        message: /^No route POST \/vps_reseller_provider\/wrong\/oauth\/token$/,
      });
      assert.ok(err.requestId);
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
      mockSetTimeout(ctx, { dateFrom: Date.now() });
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

/** What a foreign server answers. */
interface Answer {
  status: number;
  type: string;
  body: string;
  headers?: Record<string, string>;
}

/** A server that is not the API (a web server at a wrong base URL, a proxy): `answer` answers each request. */
async function foreignServer(
  answer: (path: string) => Answer,
): Promise<{ baseUrl: string; lastPath: () => string; close: () => Promise<void> }> {
  let last = '';
  const server = createServer((req, res) => {
    last = new URL(req.url ?? '/', 'http://x').pathname;
    const a = answer(last);
    req.resume();
    res.writeHead(a.status, { 'content-type': a.type, ...a.headers }).end(a.body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/x`,
    lastPath: () => last,
    close: async () => {
      server.close();
      await once(server, 'close');
    },
  };
}

/** The token endpoint of a foreign server that plays the provider's, for the API calls after it. */
const TOKEN = { status: 200, type: 'application/json', body: '{"access_token":"t","expires_in":3600}' };

describe("the SDK and answers that are not the API's", () => {
  const cases: {
    name: string;
    answer: (path: string) => Answer;
    status: number;
    errorCode: string;
    message: RegExp;
  }[] = [
    {
      name: "a web server's HTML 404 at a wrong base URL: http_error with the page's text",
      answer: () => ({
        status: 404,
        type: 'text/html',
        body: '<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL was not found on this server.</p></body></html>',
      }),
      status: 404,
      errorCode: 'http_error',
      message:
        /^POST \/x\/oauth\/token answered 404 Not Found: 404 Not Found Not Found The requested URL was not found on this server\.$/,
    },
    {
      name: "another framework's JSON 404: http_error with its message, not its `error` as a code",
      answer: (path) => ({
        status: 404,
        type: 'application/json',
        body: JSON.stringify({
          statusCode: 404,
          error: 'Not Found',
          message: `Route POST:${path} not found`,
        }),
      }),
      status: 404,
      errorCode: 'http_error',
      message: /^POST \/x\/oauth\/token answered 404 Not Found: Route POST:\/x\/oauth\/token not found$/,
    },
    {
      name: "a proxy's 502 page on an API call: http_error with its status and text",
      answer: (path) =>
        path.endsWith('/oauth/token')
          ? TOKEN
          : {
              status: 502,
              type: 'text/html',
              body: '<h1>Bad gateway</h1>',
              headers: { 'x-request-id': 'proxy-1' },
            },
      status: 502,
      errorCode: 'http_error',
      message: /^GET \/x\/api\/v2\/version answered 502 Bad Gateway: Bad gateway$/,
    },
    {
      name: 'a plain-text 503 with no words: http_error naming the status',
      answer: () => ({ status: 503, type: 'text/plain', body: '' }),
      status: 503,
      errorCode: 'http_error',
      message: /^POST \/x\/oauth\/token answered 503 Service Unavailable$/,
    },
    {
      name: 'a 200 that is not the envelope: invalid_response',
      answer: (path) =>
        path.endsWith('/oauth/token') ? TOKEN : { status: 200, type: 'text/html', body: '<p>Welcome</p>' },
      status: 200,
      errorCode: 'invalid_response',
      message: /envelope from GET \/x\/api\/v2\/version, got 200 text\/html/,
    },
    {
      name: 'a 200 from the token endpoint without a token: invalid_response',
      answer: () => ({ status: 200, type: 'text/html', body: '<p>Welcome</p>' }),
      status: 200,
      errorCode: 'invalid_response',
      message: /without a token/,
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const server = await foreignServer(c.answer);
      try {
        const vrp = createClient({ baseUrl: server.baseUrl, clientId: 'a', clientSecret: 'b' });
        const err = await vrpError(vrp.version(), c);
        const sent = c.answer(server.lastPath());
        if (c.errorCode === 'http_error') assert.equal(err.responseText, sent.body);
        if (sent.headers?.['x-request-id']) assert.equal(err.requestId, sent.headers['x-request-id']);
      } finally {
        await server.close();
      }
    });
  }

  test('a long body: the message quotes at most 300 characters, responseText at most 2000', async () => {
    const long = `Service Unavailable ${'x'.repeat(5000)}`;
    const server = await foreignServer(() => ({ status: 503, type: 'text/plain', body: long }));
    try {
      const vrp = createClient({ baseUrl: server.baseUrl, clientId: 'a', clientSecret: 'b' });
      const err = await vrpError(vrp.version(), {
        status: 503,
        errorCode: 'http_error',
        message: /^POST \/x\/oauth\/token answered 503 Service Unavailable: Service Unavailable x+…$/,
      });
      const quoted = err.message.slice(err.message.indexOf(': ') + 2);
      assert.equal(quoted.length, 300);
      assert.equal(err.responseText?.length, 2000);
      assert.ok(long.startsWith(err.responseText!.slice(0, -1)));
    } finally {
      await server.close();
    }
  });
});
