/**
 * The console login's `next` (where the browser goes after logging in) is taken only when it is
 * a normal path inside the console; anything else (a CR or LF, dot segments plain or
 * percent-encoded, backslashes, `//host`, another site's URL, a path beside the console) sends
 * the browser to the overview, never a 500 and never off the console.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CONSOLE } from '../../src/http/base-path.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { consoleCookie, loginToken } from '../helpers/console-session.ts';
import { createTestOperator } from '../helpers/operator.ts';

const PASSWORD = 'correct horse battery staple';
const OVERVIEW = `${CONSOLE}/`;

/** `next` values no login may send the browser to (a NUL is refused before, as in any parameter: 400). */
const REFUSED = [
  `${CONSOLE}/\r\nSet-Cookie: stolen=1`,
  `${CONSOLE}/x\ny`,
  `${CONSOLE}/x\ry`,
  `${CONSOLE}/../../x`,
  `${CONSOLE}/../console/`,
  `${CONSOLE}/%2e%2e/%2e%2e/x`,
  `${CONSOLE}/.%2E/.%2e/x`,
  `${CONSOLE}/%2e%2e%2f%2e%2e%2fx/..`,
  `${CONSOLE}/./services`,
  `${CONSOLE}/..\\..\\x`,
  `${CONSOLE}\\..\\x`,
  '\\\\evil.example/x',
  '/\\evil.example/x',
  '//evil.example/x',
  `//evil.example${CONSOLE}/`,
  `${CONSOLE}//evil.example/`,
  `https://evil.example${CONSOLE}/`,
  `http://evil.example${CONSOLE}/services`,
  'javascript:alert(1)',
  `${CONSOLE}/ services`,
  `${CONSOLE}/\tservices`,
  `${CONSOLE}/é`,
  '/vps_reseller_provider/consolex',
  '/vps_reseller_provider/operator/v1/whoami',
  'services',
  '',
];

/** `next` values inside the console, taken as they are. */
const TAKEN = [`${CONSOLE}/services?status=running`, CONSOLE, `${CONSOLE}/jobs`, `${CONSOLE}/a%2fb`];

describe('console login: where `next` may send the browser', () => {
  let t: TestApp;
  let cookie: string;
  before(async () => {
    t = await createTestApp();
    await createTestOperator(t, { name: 'alice', password: PASSWORD });
    cookie = await consoleCookie(t, 'alice', PASSWORD);
  });
  after(() => t.close());

  const getLogin = (next: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url: `${CONSOLE}/login?next=${encodeURIComponent(next)}`, headers });

  async function postLogin(next: string) {
    const { cookie: loginCookie, token } = await loginToken(t);
    return t.app.inject({
      method: 'POST',
      url: `${CONSOLE}/login`,
      headers: { cookie: loginCookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: token, name: 'alice', password: PASSWORD, next }).toString(),
    });
  }

  test('signed in already: anything but a normal console path goes to the overview', async () => {
    for (const next of REFUSED) {
      const res = await getLogin(next, { cookie });
      assert.equal(res.statusCode, 303, `${JSON.stringify(next)}: ${res.body.slice(0, 200)}`);
      assert.equal(res.headers['location'], OVERVIEW, JSON.stringify(next));
    }
  });

  test('logging in: anything but a normal console path goes to the overview', async () => {
    for (const next of REFUSED) {
      const res = await postLogin(next);
      assert.equal(res.statusCode, 303, `${JSON.stringify(next)}: ${res.body.slice(0, 200)}`);
      assert.equal(res.headers['location'], OVERVIEW, JSON.stringify(next));
    }
  });

  test('the login page keeps no refused `next` in its form', async () => {
    for (const next of REFUSED) {
      const res = await getLogin(next);
      assert.equal(res.statusCode, 200, JSON.stringify(next));
      assert.doesNotMatch(res.body, /name="next"/, JSON.stringify(next));
    }
  });

  test('a normal console path, or this server’s URL of one, is where the login goes', async () => {
    for (const next of TAKEN) {
      assert.equal((await getLogin(next, { cookie })).headers['location'], next);
      assert.equal((await postLogin(next)).headers['location'], next);
    }
    // app.inject's requests come to host localhost:80.
    const full = await getLogin(`http://localhost${CONSOLE}/jobs?status=failed`, { cookie });
    assert.equal(full.headers['location'], `${CONSOLE}/jobs?status=failed`);
  });
});
