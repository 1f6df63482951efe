import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Permission, roleAllows } from '../../domain/roles.ts';
import type { ConsoleSession } from '../../store/repos/console-sessions.ts';
import type { App } from '../app-type.ts';
import { CONSOLE } from '../base-path.ts';
import { isFields } from '../fields.ts';
import { securityHeaders } from '../security-headers.ts';
import { clearConsoleCookie, setConsoleCookie } from './cookies.ts';
import { type Html, html, isHtml } from './html.ts';
import { type Flash, page, type Section } from './layout.ts';
import { type OpsClient, OpsRefusal, opsClient } from './ops-client.ts';
import type { ConsoleSessions } from './sessions.ts';

/**
 * What every console page says to the browser: load nothing from anywhere but this server, run
 * no inline script, never be framed, send no Referer elsewhere (security-headers.ts).
 */
const CONSOLE_CSP = {
  'default-src': ["'self'"],
  'base-uri': ["'none'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
  'object-src': ["'none'"],
} as const;

const setSecurityHeaders = securityHeaders(CONSOLE_CSP);

/**
 * Every console answer's headers: the security headers, and no copy of a page kept in a cache
 * (helmet leaves Cache-Control alone; the console's assets set their own).
 */
export function setConsoleHeaders(request: FastifyRequest, reply: FastifyReply): void {
  setSecurityHeaders(request, reply);
  reply.header('cache-control', 'no-store');
}

export const SESSION_COOKIE = 'vrp_console';
/** The operator's two-factor login page (pages/two-factor.ts). */
export const TWO_FACTOR_PAGE = `${CONSOLE}/two-factor`;
const FLASH_COOKIE = 'vrp_console_flash';

/** A form field that is not there, or there twice: the form was not ours. */
export class FormError extends Error {
  override name = 'FormError';
  /** 400 unless the form could not be read at all (415). */
  statusCode = 400;
}

/** Where to send the browser after a form, with a message for the next page. */
export interface Redirect {
  readonly redirect: string;
  readonly flash?: Flash;
}

function isRedirect(value: Redirect | FastifyReply): value is Redirect {
  return typeof value.redirect === 'string';
}

/** What a console handler gets: the signed-in operator, the operator API, the request's input. */
export interface ConsoleCall {
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  readonly session: ConsoleSession;
  /** The operator API, as this operator. */
  readonly ops: OpsClient;
  /** The CSRF token every form of the page carries (`csrfField`). */
  readonly csrf: string;
  /** Whether the operator's role allows `permission` (domain/roles.ts): pages show only what it may use. */
  can(permission: Permission): boolean;
  /** A query parameter; undefined when absent or empty. A repeated one is the first. */
  query(name: string): string | undefined;
  /** A field of the posted form; FormError if it is there twice. */
  field(name: string): string | undefined;
  /** A parameter of the page's path (`:name`); empty if the path has none of that name. */
  param(name: string): string;
  /** A whole page in the console's layout, with the message left by the last form. */
  render(o: { title: string; section?: Section; body: Html }): Html;
}

/** The hidden field that carries the CSRF token in every state-changing form. */
export function csrfField(csrf: string): Html {
  return html`<input type="hidden" name="_csrf" value="${csrf}">`;
}

/** Only for resolving a path as a browser would; never contacted. */
const RESOLVE_BASE = 'http://console.invalid';

/**
 * A path of the console the browser may be sent to (a `next`, a form's `back`, a Referer), else
 * undefined: the caller sends the browser to the overview instead. Only a path that is already
 * normal is taken, the same after a browser resolves it: no dot segments (`..`, `%2e%2e`), no
 * backslash (a browser reads it as `/`), no `//` (another host), nothing but visible ASCII (a
 * CR or LF would split the Location header), and inside the console. A full URL counts only on
 * this server's host, as its path and query.
 */
export function consolePath(url: string | undefined, host: string | undefined): string | undefined {
  if (!url || !/^[\x21-\x7e]+$/.test(url) || url.includes('\\')) return undefined;
  let path = url;
  if (/^https?:\/\//i.test(url)) {
    try {
      const parsed = new URL(url);
      // Compared as URLs: `host:80` over http is `host`.
      if (host === undefined || parsed.host !== new URL(`${parsed.protocol}//${host}`).host) return undefined;
      path = parsed.pathname + parsed.search;
    } catch {
      return undefined;
    }
  }
  let resolved: URL;
  try {
    resolved = new URL(path, RESOLVE_BASE);
  } catch {
    return undefined;
  }
  const normal = resolved.pathname + resolved.search;
  if (resolved.origin !== RESOLVE_BASE || normal !== path || normal.includes('//')) return undefined;
  if (resolved.pathname !== CONSOLE && !resolved.pathname.startsWith(`${CONSOLE}/`)) return undefined;
  return normal;
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The message the last form left for this page, if any; it is shown once (the cookie is cleared). */
export function takeFlash(request: FastifyRequest, reply: FastifyReply): Flash | undefined {
  const value = request.cookies[FLASH_COOKIE];
  if (!value) return undefined;
  clearConsoleCookie(reply, FLASH_COOKIE);
  try {
    const flash: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    const { kind, text } = isFields(flash) ? flash : {};
    if ((kind === 'ok' || kind === 'error') && typeof text === 'string') {
      return { kind, text: text.slice(0, 500) };
    }
  } catch {
    // A flash cookie we did not write: no message.
  }
  return undefined;
}

/** Sends the browser to `to` (303: the next request is a GET), leaving `flash` for that page. */
export function redirect(_request: FastifyRequest, reply: FastifyReply, to: Redirect): FastifyReply {
  if (to.flash) {
    const value = Buffer.from(JSON.stringify(to.flash)).toString('base64url');
    setConsoleCookie(reply, FLASH_COOKIE, value, 60);
  }
  return reply.code(303).header('location', to.redirect).send();
}

/**
 * Sends a page, with the console's headers: also on the error pages of requests refused by the
 * app's first hooks (an unknown address, a wrong method, shutting down), which the console's own
 * onRequest hook never saw.
 */
export function sendPage(reply: FastifyReply, body: Html, status = 200): FastifyReply {
  if (!reply.raw.hasHeader('content-security-policy')) setSecurityHeaders(reply.request, reply);
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(body.text);
}

function fieldsOf(request: FastifyRequest): Record<string, unknown> {
  return isFields(request.body) ? request.body : {};
}

function firstQuery(request: FastifyRequest, name: string): string | undefined {
  const value = isFields(request.query) ? request.query[name] : undefined;
  const first: unknown = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' && first !== '' ? first : undefined;
}

/**
 * Registers the console's pages (GET) and forms (POST) on `app`. Every one needs a session: without
 * one a page sends the browser to the login page (coming back after it), a form is refused. Every
 * form must carry the session's CSRF token and, when the browser says where it comes from
 * (`Origin`), come from this server. A refusal of the operator API is shown as it is: on a page
 * as an error page with the API's status, after a form as a message on the page it came from.
 */
export function createConsoleRouter(app: App, sessions: ConsoleSessions) {
  /**
   * The call of a complete login; `enrol` when the login waits for the operator's enrolment in
   * two-factor login (only routes that allow it open then); undefined without a login (a login
   * waiting for its second factor is none yet).
   */
  async function callOf(
    request: FastifyRequest,
    reply: FastifyReply,
    allowEnrol: boolean,
  ): Promise<ConsoleCall | 'enrol' | undefined> {
    const secret = request.cookies[SESSION_COOKIE];
    const session = secret === undefined ? undefined : await sessions.find(secret);
    if (!session || secret === undefined || session.stage === 'code') return undefined;
    if (session.stage === 'enrol' && !allowEnrol) return 'enrol';
    const csrf = sessions.csrfToken(secret);
    // Forms answer with a redirect; only pages show (and so take) the message.
    const flash = request.method === 'GET' ? takeFlash(request, reply) : undefined;
    return {
      request,
      reply,
      session,
      csrf,
      ops: opsClient(app, sessions.accessToken(session), {
        requestId: request.id,
        address: request.ip,
        session: sessions.proof(session),
      }),
      can: (permission) => roleAllows(session.role, permission),
      query: (name) => firstQuery(request, name),
      field(name) {
        const value = fieldsOf(request)[name];
        if (Array.isArray(value)) throw new FormError(`The form has the field "${name}" more than once`);
        return typeof value === 'string' ? value : undefined;
      },
      param(name) {
        const value = isFields(request.params) ? request.params[name] : undefined;
        return typeof value === 'string' ? value : '';
      },
      render: (o) =>
        page({ ...o, operator: { name: session.operatorName, role: session.role, csrf }, flash }),
    };
  }

  function errorPage(call: ConsoleCall | undefined, title: string, text: string): Html {
    const body = html`<p class="error" role="alert">${text}</p><p><a href="${CONSOLE}/">Back to the overview</a></p>`;
    return call ? call.render({ title, body }) : page({ title, body });
  }

  return {
    /**
     * A page: GET `CONSOLE + path`. `enrol`: it opens also to an operator who must enrol in
     * two-factor login before anything else (the enrolment page); every other page sends that
     * operator to enrolment.
     */
    page(
      path: string,
      handler: (call: ConsoleCall) => Promise<Html | FastifyReply>,
      options: { readonly enrol?: boolean } = {},
    ) {
      app.get(path, async (request, reply) => {
        const call = await callOf(request, reply, options.enrol === true);
        if (call === 'enrol') return redirect(request, reply, { redirect: TWO_FACTOR_PAGE });
        if (!call) {
          const next = encodeURIComponent(request.url);
          return redirect(request, reply, { redirect: `${CONSOLE}/login?next=${next}` });
        }
        try {
          const result = await handler(call);
          return isHtml(result) ? sendPage(reply, result) : result;
        } catch (err) {
          if (!(err instanceof OpsRefusal)) throw err;
          const title = err.status === 404 ? 'Not found' : 'Refused';
          return sendPage(reply, errorPage(call, title, err.message), err.status);
        }
      });
    },

    /** A form: POST `CONSOLE + path`; the handler says where to go next. `enrol` as for pages. */
    action(
      path: string,
      handler: (call: ConsoleCall) => Promise<Redirect | FastifyReply>,
      options: { readonly enrol?: boolean } = {},
    ) {
      app.post(path, async (request, reply) => {
        const call = await callOf(request, reply, options.enrol === true);
        if (call === 'enrol') {
          const text = 'Set up two-factor login first: the console opens once it is set up.';
          return redirect(request, reply, { redirect: TWO_FACTOR_PAGE, flash: { kind: 'error', text } });
        }
        if (!call) {
          return sendPage(
            reply,
            errorPage(
              undefined,
              'Signed out',
              'Your session has ended. Log in again, then repeat what you did.',
            ),
            401,
          );
        }
        const origin = request.headers.origin;
        const token = fieldsOf(request)['_csrf'];
        const fromHere =
          origin === undefined || consolePath(`${origin}${CONSOLE}/`, request.host) !== undefined;
        if (!fromHere || typeof token !== 'string' || !sameToken(token, call.csrf)) {
          return sendPage(
            reply,
            errorPage(
              call,
              'Refused',
              'This form has expired or did not come from the console. Reload the page and try again.',
            ),
            403,
          );
        }
        const back = consolePath(request.headers.referer, request.host) ?? `${CONSOLE}/`;
        try {
          const result = await handler(call);
          return isRedirect(result) ? redirect(request, reply, result) : result;
        } catch (err) {
          if (err instanceof OpsRefusal || err instanceof FormError) {
            return redirect(request, reply, { redirect: back, flash: { kind: 'error', text: err.message } });
          }
          throw err;
        }
      });
    },

    errorPage,
  };
}

export type ConsoleRouter = ReturnType<typeof createConsoleRouter>;
