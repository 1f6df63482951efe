/**
 * A console session got the way a browser gets one, through app.inject: the login page's token
 * cookie, then the login form. For tests of console answers that need no browser.
 */
import { CONSOLE } from '../../src/http/base-path.ts';
import type { TestApp } from './app.ts';

/** The `name=value` pair of cookie `name` among Set-Cookie headers. */
export function cookieOf(setCookie: string | string[] | undefined, name: string): string {
  for (const c of [setCookie ?? []].flat()) {
    const pair = c.split(';')[0] ?? '';
    if (pair.startsWith(`${name}=`)) return pair;
  }
  throw new Error(`no ${name} cookie in ${JSON.stringify(setCookie)}`);
}

/** The login form's token cookie and its value, as the login page gives them. */
export async function loginToken(t: TestApp): Promise<{ cookie: string; token: string }> {
  const page = await t.app.inject({ method: 'GET', url: `${CONSOLE}/login` });
  const cookie = cookieOf(page.headers['set-cookie'], 'vrp_console_login');
  return { cookie, token: cookie.slice(cookie.indexOf('=') + 1) };
}

/** Logs `name` in; the `Cookie` header value of its session. */
export async function consoleCookie(t: TestApp, name: string, password: string): Promise<string> {
  const { cookie, token } = await loginToken(t);
  const res = await t.app.inject({
    method: 'POST',
    url: `${CONSOLE}/login`,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: token, name, password }).toString(),
  });
  if (res.statusCode !== 303)
    throw new Error(`console login failed: ${res.statusCode} ${res.body.slice(0, 300)}`);
  return cookieOf(res.headers['set-cookie'], 'vrp_console');
}
