/**
 * Property-based fuzzing of the operator console: every form (the POST routes under the console,
 * read from the app's router at run time) with a logged-in session and a valid CSRF token, and
 * with broken ones (no session, missing, wrong or repeated tokens, missing, repeated and oversized
 * fields, other content types, NUL, CR and LF in fields); the login form with every kind of
 * `next`; every page (GET) with odd query parameters. Every answer: no 5xx, the console's security
 * headers, and an HTML page or a redirect that stays inside the console. A corpus of known cases
 * runs first, on every run.
 *
 * VRP_FUZZ_SEED, VRP_FUZZ_SCALE and VRP_FUZZ_COLLECT as in fuzz.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CONSOLE } from '../../src/http/base-path.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import {
  type ConsoleRequest,
  type ConsoleWorld,
  checkConsoleAnswer,
  consoleFormArb,
  consolePageArb,
  consoleRoutes,
  consoleSender,
  createConsoleWorld,
  loginFormArb,
} from '../helpers/fuzz-console.ts';
import { createOperatorFuzzWorld } from '../helpers/fuzz-operator.ts';
import { fuzzSettings, runCorpus, runFuzz } from '../helpers/fuzz-run.ts';
import { createFuzzWorld } from '../helpers/fuzz-world.ts';
import { testStores } from '../helpers/stores.ts';

/** A console request of the corpus. */
function known(o: {
  name: string;
  method?: string;
  url: string;
  session?: ConsoleRequest['session'];
  csrf?: ConsoleRequest['csrf'];
  fields?: [string, string][];
  status?: number;
}): ConsoleRequest {
  return {
    method: o.method ?? 'POST',
    url: o.url,
    headers: o.fields ? { 'content-type': 'application/x-www-form-urlencoded' } : {},
    payload: undefined,
    peer: '127.0.0.4',
    session: o.session ?? 'live',
    csrf: o.csrf ?? 'valid',
    fields: o.fields,
    contentType: undefined,
    expect: {
      route: `known: ${o.name}`,
      format: 'any',
      variant: 'B',
      requestId: undefined,
      outcome: o.status === undefined ? undefined : { status: o.status, rule: o.name },
      forbidden: [],
      tags: ['corpus'],
    },
  };
}

/** The console corpus: where `next` and `back` may lead, and NULs where the console passes them on. */
function knownCases(world: ConsoleWorld): ConsoleRequest[] {
  const login = (what: string, next: string) =>
    known({
      name: `login, next ${what}`,
      url: `${CONSOLE}/login`,
      session: 'none',
      fields: [
        ['name', world.operator.name],
        ['password', world.operator.password],
        ['next', next],
      ],
      status: 303,
    });
  const service = world.ids['service_id']!.shared[0]!;
  return [
    login('with CR LF', `${CONSOLE}/\r\nSet-Cookie: stolen=1`),
    login('with LF', `${CONSOLE}/x\ny`),
    login('with ..', `${CONSOLE}/../../x`),
    login('with %2e%2e', `${CONSOLE}/%2e%2e/%2e%2e/x`),
    login('to //host', '//evil.example/x'),
    login('to another site', `https://evil.example${CONSOLE}/`),
    known({
      name: 'login page signed in, next with CR LF',
      method: 'GET',
      url: `${CONSOLE}/login?next=${encodeURIComponent(`${CONSOLE}/\r\nx`)}`,
      status: 303,
    }),
    known({
      name: 'login page, next ..',
      method: 'GET',
      session: 'none',
      url: `${CONSOLE}/login?next=${encodeURIComponent(`${CONSOLE}/../../x`)}`,
      status: 200,
    }),
    known({
      name: 'services, cursor NUL',
      method: 'GET',
      url: `${CONSOLE}/services?cursor=%00`,
      status: 400,
    }),
    known({ name: 'jobs, cursor NUL', method: 'GET', url: `${CONSOLE}/jobs?cursor=a%00b`, status: 400 }),
    known({
      name: 'resellers, forged cursor',
      method: 'GET',
      url: `${CONSOLE}/resellers?cursor=abc`,
      status: 400,
    }),
    known({
      name: 'services, unknown filter',
      method: 'GET',
      url: `${CONSOLE}/services?owner=acme&status[]=x`,
    }),
    known({
      name: 'a form, back out of the console',
      url: `${CONSOLE}/services/${service}/start`,
      fields: [['back', '//evil.example/']],
    }),
    known({
      name: 'a form, back with ..',
      url: `${CONSOLE}/services/${service}/start`,
      fields: [['back', `${CONSOLE}/../../x`]],
    }),
    known({
      name: 'a form, a NUL in a field',
      url: `${CONSOLE}/resellers`,
      fields: [['name', 'a\u0000b']],
      status: 400,
    }),
    known({
      name: 'a form, a field twice',
      url: `${CONSOLE}/resellers`,
      fields: [
        ['name', 'a'],
        ['name', 'b'],
      ],
      status: 303,
    }),
    known({
      name: 'a form, its token twice',
      url: `${CONSOLE}/resellers`,
      csrf: 'repeated',
      fields: [['name', 'a']],
      status: 403,
    }),
    // Refused before routing (a path that is not UTF-8, an id over the router's length): pages too.
    known({
      name: 'a page, a path not UTF-8',
      method: 'GET',
      url: `${CONSOLE}/services/%E2%82`,
      status: 400,
    }),
    known({
      name: 'a page, an id of 300 characters',
      method: 'GET',
      url: `${CONSOLE}/services/${'a'.repeat(300)}`,
      status: 404,
    }),
    known({
      name: 'a form, a path not UTF-8',
      url: `${CONSOLE}/services/%ff/start`,
      fields: [['back', CONSOLE]],
      status: 400,
    }),
    known({
      name: 'a form, no token',
      url: `${CONSOLE}/resellers`,
      csrf: 'missing',
      fields: [['name', 'a']],
      status: 403,
    }),
  ];
}

/** Counts what a part sends and how long it takes: reported, never asserted. */
function meter(t: { diagnostic(message: string): void }, name: string) {
  const started = performance.now();
  let count = 0;
  return {
    wrap<R, A>(send: (req: R) => Promise<A>) {
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

for (const store of testStores()) {
  describe(`fuzz: every console form and page, every answer a page (${store})`, () => {
    let t: TestApp;
    let world: ConsoleWorld;
    let forms: string[];
    let pages: string[];

    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      const setup = await createFuzzWorld(t);
      const ops = await createOperatorFuzzWorld(t, setup);
      world = await createConsoleWorld(t, ops.ids, ops.cursors);
      forms = consoleRoutes(t.app, 'POST');
      pages = consoleRoutes(t.app, 'GET');
    });
    after(() => t.close());

    test('the fuzzer finds every console form and page', () => {
      assert.ok(forms.length >= 20, `only ${forms.length} forms: ${forms.join(' ')}`);
      for (const path of [
        '/login',
        '/logout',
        '/resellers',
        '/jobs/:job_id/retry',
        '/services/:service_id/reset-password',
      ])
        assert.ok(forms.includes(`${CONSOLE}${path}`), path);
      for (const path of [
        '',
        '/login',
        '/services',
        '/services/:service_id',
        '/jobs',
        '/audit',
        '/usage.csv',
      ])
        assert.ok(pages.includes(`${CONSOLE}${path}`), `${path} in ${pages.join(' ')}`);
    });

    test('known cases: next and back out of the console, NULs and forged cursors, tokens repeated', async (c) => {
      const m = meter(c, `console corpus (${store})`);
      await runCorpus(
        `console corpus (${store})`,
        knownCases(world),
        m.wrap(consoleSender(t, world)),
        checkConsoleAnswer,
      );
      m.report();
    });

    test('forms', async (c) => {
      const m = meter(c, `console forms (${store})`);
      await runFuzz(
        `console forms (${store})`,
        consoleFormArb(forms, world),
        m.wrap(consoleSender(t, world)),
        fuzzSettings(250),
        checkConsoleAnswer,
      );
      m.report();
    });

    test('the login form', async (c) => {
      const m = meter(c, `console login (${store})`);
      await runFuzz(
        `console login (${store})`,
        loginFormArb(world),
        m.wrap(consoleSender(t, world)),
        fuzzSettings(60),
        checkConsoleAnswer,
      );
      m.report();
    });

    test('pages', async (c) => {
      const m = meter(c, `console pages (${store})`);
      await runFuzz(
        `console pages (${store})`,
        consolePageArb(pages, world),
        m.wrap(consoleSender(t, world)),
        fuzzSettings(150),
        checkConsoleAnswer,
      );
      m.report();
    });

    test('the console still serves its session', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: `${CONSOLE}/services`,
        headers: { cookie: world.cookie },
      });
      assert.equal(res.statusCode, 200, res.body.slice(0, 300));
    });
  });
}
