/**
 * Property-based fuzzing of every route of docs/openapi-operator.json (read at run time, so new
 * routes are covered) with an operator's token and others: valid and broken path ids, query
 * strings (filters valid and unknown, `x[]=`, repeated parameters, NUL and control characters,
 * very long values, forged and garbage cursors), bodies, through app.inject and a loopback
 * socket, on each store. Every answer must be a non-5xx in the variant B envelope, one the
 * operator document gives, a 4xx with its error_code; a cursor no list gave is 400
 * invalid_cursor. A corpus of known cases runs first, on every run.
 *
 * VRP_FUZZ_SEED, VRP_FUZZ_SCALE and VRP_FUZZ_COLLECT as in fuzz.test.ts.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import type { FuzzResponse } from '../helpers/fuzz-checks.ts';
import {
  assertHeadOverLimitHasNoBody,
  assertSecondRetryRefused,
  knownRequest,
} from '../helpers/fuzz-corpus.ts';
import {
  checkOperatorDocument,
  createOperatorFuzzWorld,
  forgedCursors,
  listOf,
  loadOperatorRoutes,
  type OperatorFuzzWorld,
} from '../helpers/fuzz-operator.ts';
import { rawRequestArb } from '../helpers/fuzz-raw-requests.ts';
import { type FuzzRequest, fuzzRequestArb } from '../helpers/fuzz-requests.ts';
import { fuzzSettings, runCorpus, runFuzz } from '../helpers/fuzz-run.ts';
import { createFuzzWorld, type FuzzSetup } from '../helpers/fuzz-world.ts';
import { OPS, opsCall } from '../helpers/operator.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { testStores } from '../helpers/stores.ts';

const routes = loadOperatorRoutes();
/** The lists: GET routes that take a cursor. */
const lists = routes.filter((r) => r.method === 'GET' && r.query.some((q) => q.name === 'cursor'));

test('the fuzzer reads every route of the operator document', () => {
  assert.ok(routes.length >= 25, `only ${routes.length} routes`);
  assert.ok(routes.every((r) => r.template.startsWith(OPS)));
  assert.ok(routes.filter((r) => r.kind === 'api').every((r) => r.scope === 'operator'));
  assert.deepEqual(lists.map((r) => listOf(r.template)).sort(), [
    'audit',
    'hosts',
    'jobs',
    'resellers',
    'services',
  ]);
});

/** Counts what a part sends and how long it takes: reported, never asserted. */
function meter(t: { diagnostic(message: string): void }, name: string) {
  const started = performance.now();
  let count = 0;
  return {
    wrap<R>(send: (req: R) => Promise<FuzzResponse>) {
      return (req: R) => {
        count++;
        return send(req);
      };
    },
    report() {
      t.diagnostic(`${name}: ${count} requests in ${Math.round(performance.now() - started)} ms`);
    },
  };
}

/** The operator corpus: the cases outside testing found, as requests with the answer each must get. */
function knownCases(world: OperatorFuzzWorld): FuzzRequest[] {
  const auth = { authorization: world.auths[0]!.authorization! };
  const get = (name: string, url: string, status: number, code?: string) =>
    knownRequest({
      name,
      url: `${OPS}/${url}`,
      headers: auth,
      outcome: { status, ...(code ? { code } : {}), rule: name },
    });
  const cases = [
    // A NUL cannot be stored: refused before the list reads it (400 with an error_code, never a 500).
    get('a NUL as the cursor', 'services?cursor=%00', 400),
    get('a NUL inside the cursor', 'jobs?cursor=a%00b', 400),
    get('an empty cursor', 'resellers?cursor=', 400),
    get('an array-form filter', 'services?reseller_id[]=x', 400, 'validation_failed'),
    get('an array-form filter, encoded', 'services?reseller_id%5B%5D=x', 400, 'validation_failed'),
    get('an array-form filter of jobs', 'jobs?service_id[]=x', 400, 'validation_failed'),
    get('an unknown filter of services', 'services?owner=acme', 400, 'validation_failed'),
    get('an unknown filter of jobs', 'jobs?state=failed', 400, 'validation_failed'),
    get('an unknown filter of resellers', 'resellers?name=acme', 400, 'validation_failed'),
    get('an unknown filter of hosts', 'hosts?state=active', 400, 'validation_failed'),
    get('an unknown filter of audit', 'audit?verb=service.order', 400, 'validation_failed'),
    get('the audit log by an action no entry has', 'audit?action=service.order', 200),
    get('a filter given twice', 'services?status=running&status=failed', 400, 'validation_failed'),
    get('a parameter on a route without any', 'whoami?x=1', 400, 'validation_failed'),
  ];
  for (const route of lists) {
    const list = listOf(route.template);
    const given = world.cursors[list];
    if (given)
      cases.push(get(`${list}: the cursor it gave`, `${list}?cursor=${encodeURIComponent(given)}`, 200));
    for (const [what, cursor] of Object.entries(forgedCursors(list, given))) {
      cases.push(
        get(
          `${list}: a cursor ${what}`,
          `${list}?cursor=${encodeURIComponent(cursor)}`,
          400,
          'invalid_cursor',
        ),
      );
    }
    for (const [other, cursor] of Object.entries(world.cursors).filter(([l]) => l !== list)) {
      cases.push(
        get(
          `${list}: the cursor ${other} gave`,
          `${list}?cursor=${encodeURIComponent(cursor)}`,
          400,
          'invalid_cursor',
        ),
      );
    }
  }
  return cases;
}

for (const store of testStores()) {
  describe(`fuzz: every operator API route, every answer well-formed (${store})`, () => {
    let t: TestApp;
    let setup: FuzzSetup;
    let world: OperatorFuzzWorld;
    const inject = async (req: FuzzRequest): Promise<FuzzResponse> => {
      const res = await t.app.inject({
        method: req.method as 'GET',
        url: req.url,
        headers: req.headers,
        payload: req.payload,
        remoteAddress: req.peer,
      });
      return { status: res.statusCode, headers: res.headers, body: res.body };
    };

    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      setup = await createFuzzWorld(t);
      world = await createOperatorFuzzWorld(t, setup);
    });
    after(() => t.close());

    test('known cases: NUL, empty, forged and other lists’ cursors; array-form, unknown and repeated filters', async (c) => {
      const m = meter(c, `operator corpus (${store})`);
      await runCorpus(`operator corpus (${store})`, knownCases(world), m.wrap(inject), checkOperatorDocument);
      m.report();
    });

    test('known case: a body that is not JSON, to a route that takes none, is 415 as the operator document says', async (c) => {
      const job = world.ids['job_id']!.shared[0]!;
      const reseller = world.ids['reseller_id']!.shared[0]!;
      const cases = ['hosts/sim-host-1/drain', `resellers/${reseller}/enable`, `jobs/${job}/cancel`].map(
        (path) =>
          knownRequest({
            name: `POST ${path}, text/plain`,
            method: 'POST',
            url: `${OPS}/${path}`,
            headers: { authorization: world.auths[0]!.authorization!, 'content-type': 'text/plain' },
            payload: 'x',
            outcome: { status: 415, code: 'unsupported_media_type', rule: 'a body that is not JSON is 415' },
          }),
      );
      const m = meter(c, `operator 415 cases (${store})`);
      await runCorpus(`operator 415 cases (${store})`, cases, m.wrap(inject), checkOperatorDocument);
      m.report();
    });

    test('known case: HEAD with a request line over 16 KB has no body bytes', async () => {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (t.app.server.address() as AddressInfo).port;
      await assertHeadOverLimitHasNoBody(port, `${OPS}/services`);
    });

    test('known case: a request in absolute form refused before its route is answered in variant B', async () => {
      const port = (t.app.server.address() as AddressInfo).port;
      const id = world.ids['service_id']!.shared[0]!;
      for (const [line, status] of [
        [`PUT http://127.0.0.1${OPS}/services/${id}`, 405],
        [`GET http://127.0.0.1${OPS}/no-such-route`, 404],
        [`POST http://127.0.0.1${OPS}/hosts/%ff/drain`, 400],
      ] as const) {
        const head = `${line} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nauthorization: ${world.auths[0]!.authorization}\r\nx-envelope-variant: A`;
        const res = await rawRequest(port, '127.0.0.3', Buffer.from(head), Buffer.alloc(0));
        assert.equal(res.status, status, `${line}: ${res.body}`);
        const body = JSON.parse(res.body);
        assert.equal(body.status, 'Error', `${line}: ${res.body}`);
        assert.equal(typeof body.error_code, 'string', line);
        assert.ok(!('success' in body), `${line}: ${res.body}`);
      }
    });

    test('known case: a second retry of the same failed job is 409 job_already_retried', async () => {
      await assertSecondRetryRefused(t, world.liveToken, setup.liveToken);
    });

    test('requests through app.inject', async (c) => {
      const m = meter(c, `operator inject (${store})`);
      await runFuzz(
        `operator inject (${store})`,
        fuzzRequestArb(routes, world),
        m.wrap(inject),
        fuzzSettings(400),
        checkOperatorDocument,
      );
      m.report();
    });

    test('requests over a loopback socket, parsed by Node', async (c) => {
      const port = (t.app.server.address() as AddressInfo).port;
      const m = meter(c, `operator loopback (${store})`);
      await runFuzz(
        `operator loopback (${store})`,
        rawRequestArb(fuzzRequestArb(routes, world)),
        m.wrap((req) => rawRequest(port, req.peer, req.head, req.body)),
        fuzzSettings(60),
      );
      m.report();
    });

    test('the server is still alive and serving the operator', async () => {
      assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      const whoami = await opsCall(t, world.liveToken, 'GET', 'whoami');
      assert.equal(whoami.status, 200, JSON.stringify(whoami.body));
      for (const route of lists) {
        const res = await opsCall(t, world.liveToken, 'GET', `${listOf(route.template)}?limit=5`);
        assert.equal(res.status, 200, `${route.template}: ${JSON.stringify(res.body)}`);
      }
    });
  });
}
