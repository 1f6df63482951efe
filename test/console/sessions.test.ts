/**
 * The console's sessions over HTTP (no browser needed): cookies, expiry, CSRF, throttling,
 * logout, and the ways an operator's sessions end. Both stores.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setOperatorEnabledByName, setOperatorPassword } from '../../src/auth/operators.ts';
import { CONSOLE } from '../../src/http/base-path.ts';
import { pruneBatch } from '../../src/store/repos/retention.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createManualClock } from '../helpers/manual-clock.ts';
import { createTestOperator } from '../helpers/operator.ts';
import { TEST_PASSWORD_COST } from '../helpers/secret-cost.ts';
import { testStores } from '../helpers/stores.ts';

const PASSWORD = 'a console password of some length';
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

function cookieOf(setCookie: string | string[] | undefined, name: string): string | undefined {
  for (const c of [setCookie ?? []].flat()) {
    const m = new RegExp(`^${name}=([^;]*)`).exec(c);
    if (m) return m[1];
  }
  return undefined;
}

for (const kind of testStores()) {
  describe(`console sessions (${kind})`, () => {
    const clock = createManualClock();
    let t: TestApp;
    before(async () => {
      t = await createTestApp({}, { store: kind, clock });
      await createTestOperator(t, { name: 'carol', password: PASSWORD });
    });
    after(() => t?.close());

    /** The login form's token and its cookie, as a browser gets them. */
    async function loginForm() {
      const res = await t.app.inject({ method: 'GET', url: `${CONSOLE}/login` });
      assert.equal(res.statusCode, 200);
      const token = cookieOf(res.headers['set-cookie'], 'vrp_console_login');
      assert.ok(token);
      assert.match(res.body, new RegExp(`name="_csrf" value="${token}"`));
      return token;
    }

    async function logIn(name = 'carol', password = PASSWORD, headers: Record<string, string> = {}) {
      const token = await loginForm();
      return t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/login`,
        headers: { ...FORM, cookie: `vrp_console_login=${token}`, ...headers },
        payload: form({ _csrf: token, name, password }),
      });
    }

    async function session(): Promise<string> {
      const res = await logIn();
      assert.equal(res.statusCode, 303);
      const secret = cookieOf(res.headers['set-cookie'], 'vrp_console');
      assert.ok(secret);
      return secret;
    }

    const overview = (secret: string) =>
      t.app.inject({ method: 'GET', url: `${CONSOLE}/`, headers: { cookie: `vrp_console=${secret}` } });

    /** The CSRF token of the session, from the logout form of a page. */
    async function csrfOf(secret: string): Promise<string> {
      const res = await overview(secret);
      const m = /name="_csrf" value="([^"]+)"/.exec(res.body);
      assert.ok(m, 'the page has a form with the CSRF token');
      return m[1]!;
    }

    test('a login sets an HttpOnly, SameSite=Strict cookie; Secure when the console is reached over https', async () => {
      // The attributes in any order (RFC 6265 gives their order no meaning), exactly these.
      const attributesOf = (res: { headers: Record<string, unknown> }) => {
        const all = [res.headers['set-cookie'] as string | string[] | undefined].flat();
        const cookie = all.find((c) => c?.startsWith('vrp_console=')) ?? '';
        return cookie.split('; ').slice(1).sort();
      };
      const plain = await logIn();
      assert.deepEqual(attributesOf(plain), [
        'HttpOnly',
        'Path=/vps_reseller_provider/console',
        'SameSite=Strict',
      ]);
      const https = await logIn('carol', PASSWORD, { 'x-forwarded-proto': 'https' });
      assert.deepEqual(attributesOf(https), [
        'HttpOnly',
        'Path=/vps_reseller_provider/console',
        'SameSite=Strict',
        'Secure',
      ]);
    });

    test('the store keeps only a hash of the session secret', async () => {
      const secret = await session();
      const rows = await t.ctx.store.db.selectFrom('console_sessions').select('id').execute();
      assert.ok(rows.length > 0);
      assert.ok(rows.every((r) => r.id !== secret && /^[0-9a-f]{64}$/.test(r.id)));
    });

    test('a wrong password is 401 with one message, whether the name exists or not; no session', async () => {
      for (const [name, password] of [
        ['carol', 'wrong password, long enough'],
        ['nobody', PASSWORD],
      ] as const) {
        const res = await logIn(name, password);
        assert.equal(res.statusCode, 401);
        assert.match(res.body, /Wrong operator name or password\./);
        assert.equal(cookieOf(res.headers['set-cookie'], 'vrp_console'), undefined);
      }
    });

    test('a login without the form token, or from another site, is refused', async () => {
      const token = await loginForm();
      const noToken = await t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/login`,
        headers: { ...FORM, cookie: `vrp_console_login=${token}` },
        payload: form({ name: 'carol', password: PASSWORD }),
      });
      assert.equal(noToken.statusCode, 403);
      const elsewhere = await logIn('carol', PASSWORD, { origin: 'https://evil.example' });
      assert.equal(elsewhere.statusCode, 403);
      assert.equal(cookieOf(elsewhere.headers['set-cookie'], 'vrp_console'), undefined);
    });

    test('a form without the CSRF token, with another token, or from another origin is refused', async () => {
      const secret = await session();
      const csrf = await csrfOf(secret);
      const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
        t.app.inject({
          method: 'POST',
          url: `${CONSOLE}/logout`,
          headers: { ...FORM, cookie: `vrp_console=${secret}`, ...headers },
          payload: form(fields),
        });
      assert.equal((await post({})).statusCode, 403);
      // Another token: the right one with its last character changed (to one it is not).
      const other = `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}`;
      assert.equal((await post({ _csrf: other })).statusCode, 403);
      assert.equal((await post({ _csrf: csrf }, { origin: 'http://evil.example' })).statusCode, 403);
      // Still logged in after all of these.
      assert.equal((await overview(secret)).statusCode, 200);
      const ok = await post({ _csrf: csrf }, { origin: `http://${'localhost:80'}` });
      assert.equal(ok.statusCode, 303);
      assert.equal(ok.headers.location, `${CONSOLE}/login`);
      // Logged out: the page sends the browser to the login.
      const after = await overview(secret);
      assert.equal(after.statusCode, 303);
      assert.match(String(after.headers.location), /\/console\/login\?next=/);
    });

    test('a session ends after the idle time, and at its absolute end however busy', async () => {
      const idle = await session();
      clock.advance(t.ctx.config.consoleIdleMs + 1000);
      assert.equal((await overview(idle)).statusCode, 303);

      const busy = await session();
      const step = t.ctx.config.consoleIdleMs / 2;
      let elapsed = 0;
      while (elapsed + step < t.ctx.config.consoleSessionMs) {
        assert.equal((await overview(busy)).statusCode, 200, `still in at ${elapsed / 60_000} min`);
        clock.advance(step);
        elapsed += step;
      }
      clock.advance(t.ctx.config.consoleSessionMs - elapsed);
      assert.equal((await overview(busy)).statusCode, 303);
    });

    test('disabling the operator or changing its password ends its sessions; enabling it does not revive them', async () => {
      const a = await session();
      await setOperatorEnabledByName(t.ctx.store.db, 'carol', false, clock.now());
      assert.equal((await overview(a)).statusCode, 303);
      await setOperatorEnabledByName(t.ctx.store.db, 'carol', true, clock.now());
      assert.equal((await overview(a)).statusCode, 303);

      const b = await session();
      assert.equal((await overview(b)).statusCode, 200);
      // At the tests' cost: at the production one, every later login as carol takes ~0.6 s.
      await setOperatorPassword(t.ctx.store.db, 'carol', PASSWORD, clock.now(), undefined, {
        passwordCost: TEST_PASSWORD_COST,
      });
      assert.equal((await overview(b)).statusCode, 303);
    });

    test('login and logout are in the audit log as the operator', async () => {
      const secret = await session();
      const csrf = await csrfOf(secret);
      await t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/logout`,
        headers: { ...FORM, cookie: `vrp_console=${secret}` },
        payload: form({ _csrf: csrf }),
      });
      const actions = await t.ctx.store.db
        .selectFrom('audit_log')
        .select(['action', 'actor_type'])
        .where('action', 'like', 'console.%')
        .execute();
      assert.ok(actions.some((a) => a.action === 'console.login' && a.actor_type === 'operator'));
      assert.ok(actions.some((a) => a.action === 'console.logout' && a.actor_type === 'operator'));
    });

    test('the login sends the browser back only to a console page', async () => {
      const token = await loginForm();
      for (const [next, expected] of [
        [`${CONSOLE}/jobs?status=failed`, `${CONSOLE}/jobs?status=failed`],
        ['https://evil.example/', `${CONSOLE}/`],
        ['//evil.example/vps_reseller_provider/console/', `${CONSOLE}/`],
        ['/vps_reseller_provider/public/api/v2/products', `${CONSOLE}/`],
      ]) {
        const res = await t.app.inject({
          method: 'POST',
          url: `${CONSOLE}/login`,
          headers: { ...FORM, cookie: `vrp_console_login=${token}` },
          payload: form({ _csrf: token, name: 'carol', password: PASSWORD, next: next! }),
        });
        assert.equal(res.statusCode, 303);
        assert.equal(res.headers.location, expected);
      }
    });

    test('expired sessions are pruned', async () => {
      await session();
      clock.advance(t.ctx.config.consoleSessionMs + 1);
      const pruned = await pruneBatch(t.ctx.store.db, 'consoleSessions', clock.now(), 1000);
      assert.ok(pruned >= 1);
      const left = await t.ctx.store.db
        .selectFrom('console_sessions')
        .select('id')
        .where('expires_at', '<=', clock.now())
        .execute();
      assert.deepEqual(left, []);
    });

    test('a form body that is not a form, or too large, is a 4xx page', async () => {
      const secret = await session();
      const json = await t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/logout`,
        headers: { 'content-type': 'application/json', cookie: `vrp_console=${secret}` },
        payload: '{"_csrf":"x"}',
      });
      assert.equal(json.statusCode, 415);
      assert.match(String(json.headers['content-type']), /text\/html/);
      const big = await t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/logout`,
        headers: { ...FORM, cookie: `vrp_console=${secret}` },
        payload: `_csrf=${'x'.repeat(70_000)}`,
      });
      assert.equal(big.statusCode, 413);
    });
  });
}

describe('console addresses', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t?.close());

  test('an unknown console address is an HTML page (404, or 405 for a wrong method) with the console headers', async () => {
    for (const [method, url, status] of [
      ['GET', `${CONSOLE}/no-such-page`, 404],
      ['DELETE', `${CONSOLE}/login`, 405],
    ] as const) {
      const res = await t.app.inject({ method, url });
      assert.equal(res.statusCode, status);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.match(res.body, /<h1>(Not found|Refused)<\/h1>/);
      assert.match(String(res.headers['content-security-policy']), /default-src 'self'/);
    }
    // The APIs beside it keep their JSON answers.
    const api = await t.app.inject({
      method: 'GET',
      url: '/vps_reseller_provider/operator/v1/no-such-thing',
    });
    assert.equal(api.statusCode, 404);
    assert.equal(api.json().error_code, 'not_found');
  });
});

describe('console login throttle', () => {
  let t: TestApp;
  // The server's clock stands still: a lock-out lasts however slowly the attempts run.
  const clock = createManualClock();
  before(async () => {
    t = await createTestApp({}, { clock });
    await createTestOperator(t, { name: 'dave', password: PASSWORD });
  });
  after(() => t?.close());

  test('five wrong passwords from one address lock it out, with Retry-After; the right one waits too, then gets in', async () => {
    const get = await t.app.inject({ method: 'GET', url: `${CONSOLE}/login` });
    const token = cookieOf(get.headers['set-cookie'], 'vrp_console_login')!;
    const attempt = (password: string) =>
      t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/login`,
        headers: { ...FORM, cookie: `vrp_console_login=${token}` },
        payload: form({ _csrf: token, name: 'dave', password }),
      });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await attempt('wrong password, long enough')).statusCode);
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
    assert.equal(statuses[5], 429);
    const locked = await attempt(PASSWORD);
    assert.equal(locked.statusCode, 429);
    assert.ok(Number(locked.headers['retry-after']) >= 1);
    assert.match(locked.body, /Too many failed logins/);
    // Once the wait is over, the right password gets in.
    clock.advance(Number(locked.headers['retry-after']) * 1000);
    assert.equal((await attempt(PASSWORD)).statusCode, 303);
  });

  /** The login form's token, then `count` logins sent at once from `ip`: their answers. */
  async function loginsAtOnce(ip: string, passwords: string[]) {
    const get = await t.app.inject({ method: 'GET', url: `${CONSOLE}/login`, remoteAddress: ip });
    const token = cookieOf(get.headers['set-cookie'], 'vrp_console_login')!;
    return Promise.all(
      passwords.map((password) =>
        t.app.inject({
          method: 'POST',
          url: `${CONSOLE}/login`,
          headers: { ...FORM, cookie: `vrp_console_login=${token}` },
          payload: form({ _csrf: token, name: 'dave', password }),
          remoteAddress: ip,
        }),
      ),
    );
  }

  test('20 wrong passwords sent at once from one address: five get 401, the rest 429 with Retry-After', async () => {
    const answers = await loginsAtOnce(
      '127.8.0.1',
      Array.from({ length: 20 }, (_, i) => `wrong password number ${i}`),
    );
    const codes = answers.map((a) => a.statusCode);
    assert.equal(codes.filter((s) => s === 401).length, 5, codes.join(' '));
    assert.equal(codes.filter((s) => s === 429).length, 15, codes.join(' '));
    for (const a of answers.filter((a) => a.statusCode === 429)) {
      assert.ok(Number(a.headers['retry-after']) >= 1);
      assert.match(a.body, /Try again in \d+ seconds/);
    }
    // Locked now: the right password waits too.
    const [locked] = await loginsAtOnce('127.8.0.1', [PASSWORD]);
    assert.equal(locked?.statusCode, 429);
    assert.match(locked?.body ?? '', /Too many failed logins/);
  });

  test('the right password after wrong ones, under the limit, gets in and gives the count back', async () => {
    const ip = '127.8.0.2';
    const first = await loginsAtOnce(ip, [
      'wrong password one',
      'wrong password two',
      'wrong password three',
    ]);
    assert.deepEqual(
      first.map((a) => a.statusCode),
      [401, 401, 401],
    );
    const [right] = await loginsAtOnce(ip, [PASSWORD]);
    assert.equal(right?.statusCode, 303);
    // The count starts again: five wrong ones get 401, however many are sent at once.
    const again = await loginsAtOnce(
      ip,
      Array.from({ length: 12 }, (_, i) => `wrong again number ${i}`),
    );
    const codes = again.map((a) => a.statusCode);
    assert.equal(codes.filter((s) => s === 401).length, 5, codes.join(' '));
    assert.equal(codes.filter((s) => s === 429).length, 7, codes.join(' '));
  });
});
