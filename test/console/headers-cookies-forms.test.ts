/**
 * What the console's standard parts send and accept, over HTTP (no browser): the exact security
 * headers of its pages and error pages (helmet), the attributes of its cookies (@fastify/cookie),
 * its form bodies (@fastify/formbody: repeated fields, other types, the size limit), and the
 * token endpoint's form bodies beside it. Both stores.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CONSOLE } from '../../src/http/base-path.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createTestOperator } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

const PASSWORD = 'a console password of some length';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const TOKEN = '/vps_reseller_provider/public/oauth/token';
/** The console's form limit (console-routes.ts). */
const FORM_LIMIT = 64 * 1024;

/** Every security header a console page sends over plain http, exactly. */
const CONSOLE_HEADERS = {
  'content-security-policy':
    "default-src 'self';base-uri 'none';form-action 'self';frame-ancestors 'none';object-src 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};
const HSTS = 'max-age=31536000';

type Headers = Record<string, string | string[] | number | undefined>;

function assertConsoleHeaders(headers: Headers, https = false, what = ''): void {
  const seen = Object.fromEntries(Object.keys(CONSOLE_HEADERS).map((name) => [name, headers[name]]));
  assert.deepEqual(seen, CONSOLE_HEADERS, what);
  assert.equal(headers['strict-transport-security'], https ? HSTS : undefined, what);
  assert.equal(headers['x-powered-by'], undefined, what);
}

/** The Set-Cookie value for `name`, split into its value and its attributes (sorted). */
function setCookie(headers: Headers, name: string): { value: string; attributes: string[] } | undefined {
  for (const c of [(headers['set-cookie'] as string | string[] | undefined) ?? []].flat()) {
    if (!c.startsWith(`${name}=`)) continue;
    const [pair, ...attributes] = c.split('; ');
    return { value: pair!.slice(name.length + 1), attributes: attributes.sort() };
  }
  return undefined;
}

const PATH = `Path=${CONSOLE}`;

for (const kind of testStores()) {
  describe(`console headers, cookies and forms (${kind})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({}, { store: kind });
      await createTestOperator(t, { name: 'erin', password: PASSWORD });
    });
    after(() => t?.close());

    async function loginToken(headers: Record<string, string> = {}): Promise<string> {
      const res = await t.app.inject({ method: 'GET', url: `${CONSOLE}/login`, headers });
      return setCookie(res.headers, 'vrp_console_login')!.value;
    }

    async function logIn(headers: Record<string, string> = {}) {
      const token = await loginToken(headers);
      return t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/login`,
        headers: { ...FORM, cookie: `vrp_console_login=${token}`, ...headers },
        payload: new URLSearchParams({ _csrf: token, name: 'erin', password: PASSWORD }).toString(),
      });
    }

    async function session(): Promise<{ secret: string; csrf: string }> {
      const res = await logIn();
      assert.equal(res.statusCode, 303);
      const secret = setCookie(res.headers, 'vrp_console')!.value;
      const page = await t.app.inject({
        method: 'GET',
        url: `${CONSOLE}/`,
        headers: { cookie: `vrp_console=${secret}` },
      });
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1];
      assert.ok(csrf);
      return { secret, csrf };
    }

    test('a console page sends exactly the security headers; HSTS only over https', async () => {
      const plain = await t.app.inject({ method: 'GET', url: `${CONSOLE}/login` });
      assert.equal(plain.statusCode, 200);
      assertConsoleHeaders(plain.headers, false, 'login page over http');
      const https = await t.app.inject({
        method: 'GET',
        url: `${CONSOLE}/login`,
        headers: { 'x-forwarded-proto': 'https' },
      });
      assertConsoleHeaders(https.headers, true, 'login page over https');
      const { secret } = await session();
      const overview = await t.app.inject({
        method: 'GET',
        url: `${CONSOLE}/`,
        headers: { cookie: `vrp_console=${secret}` },
      });
      assert.equal(overview.statusCode, 200);
      assertConsoleHeaders(overview.headers, false, 'overview');
    });

    test('error pages send the same headers: an unknown address, a wrong method, a 415 and a 413', async () => {
      for (const [method, url, status] of [
        ['GET', `${CONSOLE}/no-such-page`, 404],
        ['DELETE', `${CONSOLE}/login`, 405],
      ] as const) {
        for (const https of [false, true]) {
          const res = await t.app.inject({
            method,
            url,
            headers: https ? { 'x-forwarded-proto': 'https' } : {},
          });
          assert.equal(res.statusCode, status);
          assert.match(String(res.headers['content-type']), /^text\/html/);
          assertConsoleHeaders(res.headers, https, `${method} ${url}`);
        }
      }
      const json = await t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/login`,
        headers: { 'content-type': 'application/json' },
        payload: '{"name":"erin"}',
      });
      assert.equal(json.statusCode, 415);
      assert.match(json.body, /The console reads forms only/);
      assertConsoleHeaders(json.headers, false, '415');
      const big = await t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/login`,
        headers: FORM,
        payload: `name=${'x'.repeat(FORM_LIMIT)}`,
      });
      assert.equal(big.statusCode, 413);
      assert.match(String(big.headers['content-type']), /^text\/html/);
      assertConsoleHeaders(big.headers, false, '413');
    });

    test('the console assets keep their own Cache-Control, with the security headers', async () => {
      const res = await t.app.inject({ method: 'GET', url: `${CONSOLE}/assets/console.css` });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['cache-control'], 'public, max-age=300');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['content-security-policy'], CONSOLE_HEADERS['content-security-policy']);
    });

    test('login and logout cookies: HttpOnly, SameSite=Strict, the console path, Secure over https, Max-Age where it ends', async () => {
      for (const https of [false, true]) {
        const secure = https ? ['Secure'] : [];
        const headers: Record<string, string> = https ? { 'x-forwarded-proto': 'https' } : {};
        const form = await t.app.inject({ method: 'GET', url: `${CONSOLE}/login`, headers });
        assert.deepEqual(
          setCookie(form.headers, 'vrp_console_login')?.attributes,
          ['HttpOnly', PATH, 'SameSite=Strict', ...secure].sort(),
        );
        const login = await logIn(headers);
        assert.equal(login.statusCode, 303);
        const started = setCookie(login.headers, 'vrp_console');
        assert.match(started?.value ?? '', /^[A-Za-z0-9_-]{43}$/);
        assert.deepEqual(started?.attributes, ['HttpOnly', PATH, 'SameSite=Strict', ...secure].sort());

        const secret = started!.value;
        const page = await t.app.inject({
          method: 'GET',
          url: `${CONSOLE}/`,
          headers: { cookie: `vrp_console=${secret}`, ...headers },
        });
        const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
        const logout = await t.app.inject({
          method: 'POST',
          url: `${CONSOLE}/logout`,
          headers: { ...FORM, cookie: `vrp_console=${secret}`, ...headers },
          payload: `_csrf=${csrf}`,
        });
        assert.equal(logout.statusCode, 303);
        const ended = setCookie(logout.headers, 'vrp_console');
        assert.equal(ended?.value, '');
        assert.deepEqual(
          ended?.attributes,
          [
            'Expires=Thu, 01 Jan 1970 00:00:00 GMT',
            'HttpOnly',
            'Max-Age=0',
            PATH,
            'SameSite=Strict',
            ...secure,
          ].sort(),
        );
        // The message for the login page, for a minute; taken (and cleared) by that page.
        const flash = setCookie(logout.headers, 'vrp_console_flash');
        assert.deepEqual(
          flash?.attributes,
          ['HttpOnly', 'Max-Age=60', PATH, 'SameSite=Strict', ...secure].sort(),
        );
        const next = await t.app.inject({
          method: 'GET',
          url: `${CONSOLE}/login`,
          headers: { cookie: `vrp_console_flash=${flash!.value}`, ...headers },
        });
        assert.match(next.body, /You have logged out\./);
        assert.deepEqual(
          setCookie(next.headers, 'vrp_console_flash')?.attributes,
          [
            'Expires=Thu, 01 Jan 1970 00:00:00 GMT',
            'HttpOnly',
            'Max-Age=0',
            PATH,
            'SameSite=Strict',
            ...secure,
          ].sort(),
        );
      }
    });

    test('a cookie sent twice counts once, the first', async () => {
      const { secret } = await session();
      const page = (cookie: string) =>
        t.app.inject({ method: 'GET', url: `${CONSOLE}/`, headers: { cookie } });
      assert.equal((await page(`vrp_console=${secret}; vrp_console=nonsense`)).statusCode, 200);
      assert.equal((await page(`vrp_console=nonsense; vrp_console=${secret}`)).statusCode, 303);
      assert.equal((await page(`other=1;vrp_console=${secret}`)).statusCode, 200);
    });

    test('a repeated form field is refused with a message, not taken as its first or last value', async () => {
      const { secret, csrf } = await session();
      const res = await t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/resellers`,
        headers: {
          ...FORM,
          cookie: `vrp_console=${secret}`,
          referer: `http://localhost:80${CONSOLE}/resellers`,
        },
        payload: `_csrf=${csrf}&name=first-reseller&name=second-reseller`,
      });
      assert.equal(res.statusCode, 303);
      assert.equal(res.headers.location, `${CONSOLE}/resellers`);
      const flash = setCookie(res.headers, 'vrp_console_flash')!.value;
      assert.deepEqual(JSON.parse(Buffer.from(flash, 'base64url').toString('utf8')), {
        kind: 'error',
        text: 'The form has the field "name" more than once',
      });
      const made = await t.ctx.store.db
        .selectFrom('resellers')
        .select('name')
        .where('name', 'in', ['first-reseller', 'second-reseller'])
        .execute();
      assert.deepEqual(made, []);
      // The CSRF token twice, even the right one twice, is not a token.
      const twice = await t.app.inject({
        method: 'POST',
        url: `${CONSOLE}/logout`,
        headers: { ...FORM, cookie: `vrp_console=${secret}` },
        payload: `_csrf=${csrf}&_csrf=${csrf}`,
      });
      assert.equal(twice.statusCode, 403);
      assertConsoleHeaders(twice.headers, false, '403');
    });

    test('form bodies: a charset parameter is a form; an empty body of any type is no form; the limit is exact', async () => {
      const token = await loginToken();
      const post = (headers: Record<string, string>, payload: string) =>
        t.app.inject({
          method: 'POST',
          url: `${CONSOLE}/login`,
          headers: { cookie: `vrp_console_login=${token}`, ...headers },
          payload,
        });
      const fields = new URLSearchParams({ _csrf: token, name: 'erin', password: PASSWORD }).toString();
      const charset = await post(
        { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' },
        fields,
      );
      assert.equal(charset.statusCode, 303);
      // No body: no form token, so the form is refused, as a page (not a 415).
      for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) {
        const empty = await post({ 'content-type': type }, '');
        assert.equal(empty.statusCode, 403, type);
        assert.match(empty.body, /This form has expired/);
      }
      const plain = await post({ 'content-type': 'text/plain' }, fields);
      assert.equal(plain.statusCode, 415);
      assert.match(String(plain.headers['content-type']), /^text\/html/);
      // Exactly at the limit the form is read (its token is wrong: 403); one byte more is 413.
      const pad = (n: number) => `_csrf=x&name=erin&pad=${'p'.repeat(n - '_csrf=x&name=erin&pad='.length)}`;
      assert.equal((await post(FORM, pad(FORM_LIMIT))).statusCode, 403);
      assert.equal((await post(FORM, pad(FORM_LIMIT + 1))).statusCode, 413);
    });

    test('the token endpoint reads forms as before: repeated parameters refused, charset and encoding, JSON beside it', async () => {
      const app = await t.client();
      const post = (headers: Record<string, string>, payload: string) =>
        t.app.inject({ method: 'POST', url: TOKEN, headers, payload });
      const id = encodeURIComponent(app.client_id);
      const secret = encodeURIComponent(app.client_secret);
      for (const repeated of [
        `grant_type=client_credentials&grant_type=client_credentials&client_id=${id}&client_secret=${secret}`,
        `grant_type=client_credentials&client_id=${id}&client_id=${id}&client_secret=${secret}`,
        `grant_type=client_credentials&client_id=${id}&client_secret=${secret}&scope=access&scope=products`,
      ]) {
        const res = await post(FORM, repeated);
        assert.equal(res.statusCode, 400, repeated);
        assert.equal(res.json().error, 'invalid_request');
        assert.match(res.json().error_description, /must be given once/);
      }
      const ok = await post(
        { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
        `grant_type=client_credentials&client_id=${id}&client_secret=${secret}&scope=access+products`,
      );
      assert.equal(ok.statusCode, 200, ok.body);
      assert.equal(ok.json().scope, 'access products');
      const json = await post(
        { 'content-type': 'application/json' },
        JSON.stringify({
          grant_type: 'client_credentials',
          client_id: app.client_id,
          client_secret: app.client_secret,
        }),
      );
      assert.equal(json.statusCode, 200);
      const text = await post({ 'content-type': 'text/plain' }, 'grant_type=client_credentials');
      assert.equal(text.statusCode, 415);
      assert.equal(text.json().error, 'invalid_request');
      // A field named like a member of every object is a field like any other.
      const odd = await post(
        FORM,
        `grant_type=client_credentials&client_id=${id}&client_secret=${secret}&toString=1`,
      );
      assert.equal(odd.statusCode, 200);
    });
  });
}

describe('the API reference page', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({}, { demo: false });
  });
  after(() => t?.close());

  test('sends its own CSP and the same other security headers; HSTS only over https', async () => {
    for (const https of [false, true]) {
      const res = await t.app.inject({
        method: 'GET',
        url: '/vps_reseller_provider/public/docs',
        headers: https ? { 'x-forwarded-proto': 'https' } : {},
      });
      assert.equal(res.statusCode, 200);
      assert.equal(
        res.headers['content-security-policy'],
        "default-src 'none';script-src 'self';style-src 'self';img-src 'self' data:;connect-src 'self';base-uri 'none';form-action 'none';frame-ancestors 'none'",
      );
      const { 'content-security-policy': _, 'cache-control': __, ...others } = CONSOLE_HEADERS;
      const seen = Object.fromEntries(Object.keys(others).map((name) => [name, res.headers[name]]));
      assert.deepEqual(seen, others);
      assert.equal(res.headers['strict-transport-security'], https ? HSTS : undefined);
    }
  });
});
