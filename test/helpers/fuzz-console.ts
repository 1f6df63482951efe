/**
 * The operator console for the fuzz test: its forms (every POST route under CONSOLE) and pages
 * (every GET route), read from the app's router at run time, so a new form or page is fuzzed
 * without anyone listing it; requests with a logged-in session and a valid CSRF token, and with
 * broken ones (no session, missing, wrong or repeated tokens, missing, repeated and oversized
 * fields, other content types, NUL, CR and LF in fields, the login's `next` leading out of the
 * console); and the rules of every console answer: no 5xx, the console's security headers, an
 * HTML page or a redirect that stays inside the console.
 */
import fc from 'fast-check';
import type { App } from '../../src/http/app.ts';
import { CONSOLE, SERVICE_CONSOLE } from '../../src/http/base-path.ts';
import type { TestApp } from './app.ts';
import { consoleCookie, loginToken } from './console-session.ts';
import type { Outcome } from './fuzz-bodies.ts';
import type { FuzzResponse, Problem } from './fuzz-checks.ts';
import { BAD_SEGMENTS, type FuzzRequest, type IdPool, peerArb, withDescription } from './fuzz-requests.ts';
import { createTestOperator } from './operator.ts';

/**
 * The security headers every console answer carries, whatever went wrong: what the browser must
 * be told (load nothing from elsewhere, never frame it, sniff nothing, keep no copy).
 * test/console/headers-cookies-forms.test.ts checks the whole set on chosen pages.
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self';base-uri 'none';form-action 'self';frame-ancestors 'none';object-src 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

/** The routes `app` has for `method` under CONSOLE, as Fastify prints them (`:name` for parameters). */
export function consoleRoutes(app: App, method: 'GET' | 'POST'): string[] {
  const tree = app.printRoutes({ method, commonPrefix: false });
  const stack: string[] = [];
  const found: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:│ {3}| {4})*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    const path = `${stack[depth - 1] ?? ''}${m[2]}`;
    stack.push(path);
    if (m[3]?.split(', ').includes(method) && path.startsWith(CONSOLE)) found.push(path);
  }
  return found;
}

/** Every field a console form reads, and the login's. */
const FIELDS = [
  'back',
  'name',
  'password',
  'next',
  'suspend_reason',
  'services',
  'cpu',
  'ram',
  'hdd',
  'ip',
  'backup',
] as const;

/** Where a form or the login may be told to go next: inside the console, or anywhere else. */
export const NEXT_VALUES = [
  `${CONSOLE}/services`,
  `${CONSOLE}/jobs?status=failed`,
  CONSOLE,
  `${CONSOLE}/\r\nSet-Cookie: stolen=1`,
  `${CONSOLE}/x\ny`,
  `${CONSOLE}/x\ry`,
  `${CONSOLE}/../../x`,
  `${CONSOLE}/%2e%2e/%2e%2e/x`,
  `${CONSOLE}/.%2E/x`,
  `${CONSOLE}/..\\..\\x`,
  '//evil.example/x',
  `//evil.example${CONSOLE}/`,
  `${CONSOLE}//evil.example/`,
  `https://evil.example${CONSOLE}/`,
  `http://localhost${CONSOLE}/jobs`,
  'javascript:alert(1)',
  '/vps_reseller_provider/operator/v1/whoami',
  '',
] as const;

const VALUES = [
  '1',
  '0',
  '-1',
  '1.5',
  '',
  'abc',
  'Str0ng-pass!',
  'billing overdue',
  'fuzz-console',
  'a\u0000b',
  'a\r\nb',
  '\n',
  'caf\u00e9',
  '\ud800',
  'x'.repeat(3000),
  '999999999999',
] as const;

export interface ConsoleWorld {
  /** The Cookie header of a live session, and its CSRF token. */
  readonly cookie: string;
  readonly csrf: string;
  /** The operator that session is of (its password, for the login form). */
  readonly operator: { readonly name: string; readonly password: string };
  /** Path ids by parameter name (the operator's: every reseller's). */
  readonly ids: Readonly<Record<string, IdPool>>;
  /** A cursor each list gave (as the operator API's lists give them to the console). */
  readonly cursors: Readonly<Record<string, string>>;
  /** A new session and its token: logout ends the one it is sent with. */
  fresh(): Promise<{ cookie: string; csrf: string }>;
  /** The login form's token cookie and token. */
  login(): Promise<{ cookie: string; token: string }>;
}

const PASSWORD = 'fuzz console password';

/** The CSRF token of the session of `cookie`, as its pages carry it. */
async function csrfOf(t: TestApp, cookie: string): Promise<string> {
  const page = await t.app.inject({ method: 'GET', url: `${CONSOLE}/`, headers: { cookie } });
  const m = /name="_csrf" value="([^"]+)"/.exec(page.body);
  if (!m) throw new Error(`no CSRF token on the overview: ${page.statusCode} ${page.body.slice(0, 300)}`);
  return m[1]!;
}

export async function createConsoleWorld(
  t: TestApp,
  ids: Readonly<Record<string, IdPool>>,
  cursors: Readonly<Record<string, string>>,
): Promise<ConsoleWorld> {
  const name = 'fuzz-console-operator';
  await createTestOperator(t, { name, password: PASSWORD });
  const fresh = async () => {
    const cookie = await consoleCookie(t, name, PASSWORD);
    return { cookie, csrf: await csrfOf(t, cookie) };
  };
  const live = await fresh();
  return { ...live, operator: { name, password: PASSWORD }, ids, cursors, fresh, login: () => loginToken(t) };
}

/** A console request: its session and tokens are put in when it is sent (`ConsoleSender`). */
export interface ConsoleRequest extends FuzzRequest {
  /** Which session it is sent with: the live one, a fresh one (it may end it), or none. */
  readonly session: 'live' | 'fresh' | 'none' | 'garbage';
  /** The form's CSRF token: the session's, the login form's, or none / another. */
  readonly csrf: 'valid' | 'missing' | 'wrong' | 'repeated';
  /** The form fields other than `_csrf` (undefined: the payload is sent as it is). */
  readonly fields: readonly (readonly [string, string])[] | undefined;
  readonly contentType: string | undefined;
}

const encodeSegment = (s: string) => encodeURIComponent(s.toWellFormed());

function pathArb(
  template: string,
  ids: Readonly<Record<string, IdPool>>,
): fc.Arbitrary<{ url: string; tags: string[] }> {
  const names = [...template.matchAll(/:([a-z_]+)/g)].map((m) => m[1]!);
  const value = (name: string) => {
    const pool = ids[name];
    const known = pool ? [...pool.own, ...pool.other, ...pool.shared] : [];
    return fc.oneof(
      ...(known.length > 0
        ? [{ weight: 6, arbitrary: fc.constantFrom(...known).map((v) => [v, 'known'] as const) }]
        : []),
      { weight: 1, arbitrary: fc.uuid().map((v) => [v, 'random'] as const) },
      { weight: 1, arbitrary: fc.constantFrom(...BAD_SEGMENTS).map((v) => [v, 'bad'] as const) },
      {
        weight: 1,
        arbitrary: fc
          .string({ unit: 'binary', maxLength: 12 })
          .map((v) => [`z${encodeSegment(v)}`, 'bad'] as const),
      },
      { weight: 1, arbitrary: fc.constant(['a'.repeat(300), 'long'] as const) },
    );
  };
  return fc.tuple(...names.map(value)).map((vals) => {
    let url = template;
    names.forEach((n, i) => {
      url = url.replace(`:${n}`, vals[i]![0]);
    });
    return { url, tags: names.map((n, i) => `${n}:${vals[i]![1]}`) };
  });
}

function expectation(route: string, outcome: Outcome | undefined, tags: string[]): FuzzRequest['expect'] {
  return { route, format: 'any', variant: 'B', requestId: undefined, outcome, forbidden: [], tags };
}

const fieldArb: fc.Arbitrary<readonly [string, string]> = fc.tuple(
  fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom<string>(...FIELDS) },
    { weight: 1, arbitrary: fc.constantFrom('_csrf', '__proto__', '', 'x[]', 'name[]') },
    { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
  ),
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom<string>(...VALUES) },
    { weight: 2, arbitrary: fc.constantFrom<string>(...NEXT_VALUES) },
    { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  ),
);

const CONTENT_TYPES = [
  'text/plain',
  'application/json',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded; charset=latin1',
  'APPLICATION/X-WWW-FORM-URLENCODED',
] as const;

/** POSTs to every console form of `templates`, and to the login form. */
export function consoleFormArb(
  templates: readonly string[],
  world: ConsoleWorld,
): fc.Arbitrary<ConsoleRequest> {
  // The login's two forms (password, then the second factor's code) carry the login form's token,
  // not a session's: the session and CSRF rules below are not theirs.
  const forms = templates.filter((p) => p !== `${CONSOLE}/login` && p !== `${CONSOLE}/login/code`);
  return fc
    .record({
      template: fc.constantFrom(...forms),
      session: fc.oneof(
        { weight: 10, arbitrary: fc.constant<ConsoleRequest['session']>('live') },
        { weight: 1, arbitrary: fc.constantFrom<ConsoleRequest['session']>('none', 'garbage') },
      ),
      csrf: fc.oneof(
        { weight: 8, arbitrary: fc.constant<ConsoleRequest['csrf']>('valid') },
        { weight: 1, arbitrary: fc.constantFrom<ConsoleRequest['csrf']>('missing', 'wrong', 'repeated') },
      ),
      fields: fc.array(fieldArb, { maxLength: 4 }),
      contentType: fc.oneof(
        { weight: 10, arbitrary: fc.constant<string | undefined>('application/x-www-form-urlencoded') },
        { weight: 2, arbitrary: fc.constantFrom<string | undefined>(...CONTENT_TYPES, undefined) },
      ),
      oversized: fc.oneof(
        { weight: 20, arbitrary: fc.constant(false) },
        { weight: 1, arbitrary: fc.constant(true) },
      ),
      origin: fc.oneof(
        { weight: 8, arbitrary: fc.constant<string | undefined>(undefined) },
        { weight: 1, arbitrary: fc.constantFrom('http://localhost', 'https://evil.example', 'null') },
      ),
      referer: fc.oneof(
        { weight: 6, arbitrary: fc.constant<string | undefined>(undefined) },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            `http://localhost${CONSOLE}/services`,
            'https://evil.example/x',
            `http://localhost${CONSOLE}/../../x`,
          ),
        },
      ),
      peer: peerArb,
    })
    .chain((r) => pathArb(r.template, world.ids).map((path) => ({ ...r, path })))
    .map((r) => {
      const fields = r.oversized ? [...r.fields, ['name', 'x'.repeat(70 * 1024)] as const] : r.fields;
      const form = fields.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v.toWellFormed())}`);
      const nul = fields.some(([k, v]) => `${k}${v}`.includes('\u0000'));
      const media = (r.contentType ?? '').split(';')[0]?.trim().toLowerCase();
      const isForm = media === 'application/x-www-form-urlencoded';
      // The session and the token decide first; then the body's type and size, then what it holds.
      let outcome: Outcome | undefined;
      const routed = !r.path.tags.some((t) => t.endsWith(':bad') || t.endsWith(':long'));
      if (routed && (r.session === 'none' || r.session === 'garbage') && isForm && !r.oversized && !nul)
        outcome = { status: 401, rule: 'a form without a session is 401' };
      else if (routed && r.session === 'live' && r.csrf !== 'valid' && isForm && !r.oversized && !nul)
        outcome = { status: 403, rule: 'a form without its CSRF token is 403' };
      else if (r.oversized && routed) outcome = { status: '4xx', rule: 'a form over 64 KiB is refused' };
      const headers: Record<string, string> = {};
      if (r.contentType !== undefined) headers['content-type'] = r.contentType;
      if (r.origin !== undefined) headers['origin'] = r.origin;
      if (r.referer !== undefined) headers['referer'] = r.referer;
      return withDescription<ConsoleRequest>({
        method: 'POST',
        url: r.path.url,
        headers,
        payload: form.join('&'),
        peer: r.peer,
        // A logout ends its session: it gets one of its own.
        session: r.session === 'live' && r.template === `${CONSOLE}/logout` ? 'fresh' : r.session,
        csrf: r.csrf,
        fields,
        contentType: r.contentType,
        expect: expectation(`POST ${r.template}`, outcome, [
          `session:${r.session}`,
          `csrf:${r.csrf}`,
          `type:${r.contentType ?? '-'}`,
          ...(r.oversized ? ['oversized'] : []),
          ...(nul ? ['nul'] : []),
          ...r.path.tags,
        ]),
      });
    });
}

/** POSTs to the login form: right and wrong credentials and tokens, and every kind of `next`. */
export function loginFormArb(world: ConsoleWorld): fc.Arbitrary<ConsoleRequest> {
  return fc
    .record({
      name: fc.constantFrom(world.operator.name, 'nobody', '', 'a\u0000b', 'x'.repeat(500)),
      password: fc.constantFrom(world.operator.password, world.operator.password, 'wrong', '', 'a\r\nb'),
      next: fc.option(fc.constantFrom<string>(...NEXT_VALUES), { nil: undefined }),
      csrf: fc.oneof(
        { weight: 6, arbitrary: fc.constant<ConsoleRequest['csrf']>('valid') },
        { weight: 1, arbitrary: fc.constantFrom<ConsoleRequest['csrf']>('missing', 'wrong', 'repeated') },
      ),
      extra: fc.array(fieldArb, { maxLength: 2 }),
      contentType: fc.oneof(
        { weight: 10, arbitrary: fc.constant<string | undefined>('application/x-www-form-urlencoded') },
        { weight: 1, arbitrary: fc.constantFrom<string | undefined>(...CONTENT_TYPES, undefined) },
      ),
      peer: peerArb,
    })
    .map((r) => {
      const fields: (readonly [string, string])[] = [['name', r.name], ['password', r.password], ...r.extra];
      if (r.next !== undefined) fields.push(['next', r.next]);
      const headers: Record<string, string> = {};
      if (r.contentType !== undefined) headers['content-type'] = r.contentType;
      return withDescription<ConsoleRequest>({
        method: 'POST',
        url: `${CONSOLE}/login`,
        headers,
        payload: undefined,
        peer: r.peer,
        session: 'none',
        csrf: r.csrf,
        fields,
        contentType: r.contentType,
        expect: expectation(`POST ${CONSOLE}/login`, undefined, [
          `csrf:${r.csrf}`,
          `next:${JSON.stringify(r.next ?? null)}`,
          `type:${r.contentType ?? '-'}`,
        ]),
      });
    });
}

/** GETs of every console page, with odd query parameters (cursors with NUL, unknown filters...). */
export function consolePageArb(
  templates: readonly string[],
  world: ConsoleWorld,
): fc.Arbitrary<ConsoleRequest> {
  const pages = templates.filter((p) => !p.includes('/assets/'));
  const cursors = Object.values(world.cursors);
  const param = fc.oneof(
    fc.constantFrom(
      'cursor=%00',
      'cursor=a%00b',
      'cursor=%01',
      'cursor=abc',
      'cursor=',
      `cursor=${'c'.repeat(600)}`,
      'status=running',
      'status=failed',
      'status=nope',
      'status=running&status=failed',
      'status[]=running',
      'q=acme',
      'q=%00',
      'bogus=1',
      'limit=0',
      'limit=5',
      'from=2026-01-01&to=2026-02-01',
      'from=yesterday',
      'actor=operator:x',
      'after=%0D%0A',
      `q=${'q'.repeat(5000)}`,
      '%zz=1',
      '__proto__=1',
    ),
    fc.constantFrom(...(cursors.length > 0 ? cursors : ['x'])).map((c) => `cursor=${encodeURIComponent(c)}`),
    fc.constantFrom<string>(...NEXT_VALUES).map((n) => `next=${encodeURIComponent(n)}`),
  );
  return fc
    .record({
      template: fc.constantFrom(...pages),
      session: fc.oneof(
        { weight: 8, arbitrary: fc.constant<ConsoleRequest['session']>('live') },
        { weight: 1, arbitrary: fc.constantFrom<ConsoleRequest['session']>('none', 'garbage') },
      ),
      params: fc.array(param, { maxLength: 3 }),
      method: fc.oneof(
        { weight: 8, arbitrary: fc.constant('GET') },
        { weight: 1, arbitrary: fc.constantFrom('HEAD', 'PUT', 'DELETE', 'PATCH') },
      ),
      peer: peerArb,
    })
    .chain((r) => pathArb(r.template, world.ids).map((path) => ({ ...r, path })))
    .map((r) =>
      withDescription<ConsoleRequest>({
        method: r.method,
        url: r.params.length > 0 ? `${r.path.url}?${r.params.join('&')}` : r.path.url,
        headers: {},
        payload: undefined,
        peer: r.peer,
        session: r.session,
        csrf: 'valid',
        fields: undefined,
        contentType: undefined,
        expect: expectation(`${r.method} ${r.template}`, undefined, [`session:${r.session}`, ...r.path.tags]),
      }),
    );
}

/** Sends console requests through app.inject, with the session and tokens each names. */
export function consoleSender(t: TestApp, world: ConsoleWorld) {
  return async (req: ConsoleRequest): Promise<FuzzResponse> => {
    const headers: Record<string, string> = { ...req.headers };
    let token: string | undefined;
    if (req.url === `${CONSOLE}/login` && req.method === 'POST') {
      const login = await world.login();
      headers['cookie'] = login.cookie;
      token = login.token;
    } else if (req.session === 'live') {
      headers['cookie'] = world.cookie;
      token = world.csrf;
    } else if (req.session === 'fresh') {
      const fresh = await world.fresh();
      headers['cookie'] = fresh.cookie;
      token = fresh.csrf;
    } else if (req.session === 'garbage') {
      headers['cookie'] = 'vrp_console=not-a-session';
      token = world.csrf;
    }
    let payload = req.payload;
    if (req.fields !== undefined) {
      const csrf =
        req.csrf === 'valid'
          ? [`_csrf=${encodeURIComponent(token ?? '')}`]
          : req.csrf === 'wrong'
            ? ['_csrf=not-the-token']
            : req.csrf === 'repeated'
              ? [`_csrf=${encodeURIComponent(token ?? '')}`, `_csrf=${encodeURIComponent(token ?? '')}`]
              : [];
      const form = req.fields.map(
        ([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v.toWellFormed())}`,
      );
      payload = [...csrf, ...form].join('&');
    }
    const res = await t.app.inject({
      method: req.method as 'GET',
      url: req.url,
      headers,
      payload,
      remoteAddress: req.peer,
    });
    return { status: res.statusCode, headers: res.headers, body: res.body };
  };
}

const RESOLVE = 'http://console.invalid';

/** Whether a Location stays inside the console: a path on this server, under CONSOLE, as a browser resolves it. */
export function staysInConsole(location: string): boolean {
  if (!/^[\x21-\x7e]+$/.test(location) || location.includes('\\') || location.startsWith('//')) return false;
  let resolved: URL;
  try {
    resolved = new URL(location, RESOLVE);
  } catch {
    return false;
  }
  if (resolved.origin !== RESOLVE || !location.startsWith('/')) return false;
  // What a browser asks for must be under the console, and read so by any server after it too.
  let decoded = resolved.pathname;
  try {
    decoded = decodeURIComponent(resolved.pathname);
  } catch {
    // Not UTF-8 once decoded: judged as it is.
  }
  const under = (p: string) => p === CONSOLE || p.startsWith(`${CONSOLE}/`);
  return under(resolved.pathname) && under(decoded) && !decoded.split('/').includes('..');
}

/** The console's rules for every answer. */
export function checkConsoleAnswer(req: FuzzRequest, res: FuzzResponse): Problem[] {
  const problems: Problem[] = [];
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) {
    if (res.headers[name] !== value)
      problems.push({ check: 'console-security-headers', detail: `${name}: ${String(res.headers[name])}` });
  }
  if (res.status >= 300 && res.status < 400) {
    const location = res.headers['location'];
    // One form leads out on purpose: Open console sends its new tab to the one-time link of the
    // server's console in the browser (a page of its own, docs/console.md), and nowhere else.
    const consoleLink =
      /^\/[^?]*\/services\/[^/?]+\/console$/.test(req.url) &&
      typeof location === 'string' &&
      new RegExp(`^${SERVICE_CONSOLE}/[A-Za-z0-9_-]+$`).test(location);
    if (typeof location !== 'string' || (!staysInConsole(location) && !consoleLink))
      problems.push({ check: 'console-redirect', detail: `Location ${JSON.stringify(location)}` });
    return problems;
  }
  if (req.method === 'HEAD') return problems;
  const type = String(res.headers['content-type'] ?? '');
  const csv = res.status === 200 && req.url.split('?')[0]!.endsWith('.csv');
  // The two-factor page's QR code: an SVG image of its own, nothing else.
  if (res.status === 200 && req.url.split('?')[0]!.endsWith('.svg')) {
    if (!type.startsWith('image/svg+xml') || !res.body.startsWith('<svg'))
      problems.push({ check: 'console-not-html', detail: `content-type ${type} for an SVG` });
    return problems;
  }
  if (csv ? !type.startsWith('text/csv') : !type.startsWith('text/html'))
    problems.push({ check: 'console-not-html', detail: `content-type ${type}` });
  else if (!csv && !res.body.startsWith('<!doctype html>'))
    problems.push({ check: 'console-not-html', detail: `body ${JSON.stringify(res.body.slice(0, 120))}` });
  return problems;
}
