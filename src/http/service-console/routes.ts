import { randomBytes } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import fastifyWebsocket from '@fastify/websocket';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import type { ConsoleKind } from '../../drivers/driver.ts';
import {
  type ConsoleLinkSession,
  findConsoleLinkSession,
  openConsoleLink,
} from '../../store/repos/service-console-links.ts';
import { findService } from '../../store/repos/services.ts';
import { CONSOLE_STATUSES, hashSecret } from '../actions/console.ts';
import type { App } from '../app-type.ts';
import { SERVICE_CONSOLE } from '../base-path.ts';
import type { Html } from '../console/html.ts';
import { namedPlugin } from '../named-plugin.ts';
import { isHttps, securityHeaders } from '../security-headers.ts';
import { consoleAssets } from './assets.ts';
import { bridgeConsole, CLOSE_SERVICE_LEFT, CLOSE_SESSION_ENDED } from './bridge.ts';
import type { ConsoleOptions, ServiceConsoles } from './consoles.ts';
import { consolePage, refusalPage } from './page.ts';

/** The session's cookie: sent only to the console's own paths, never read by a script. */
export const SESSION_COOKIE = 'vrp_service_console';

/**
 * How often an open console checks that its session and its service still allow it: its row
 * read again ends it when something ended the session (migrations/035: the service left
 * `running`/`rescue`, the reseller or the client that made the link was disabled or revoked).
 */
const POLL_MS = 1000;

/** A link's token and a session's secret: 32 random bytes, base64url. */
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * The page's own scripts and styles only; its WebSockets and fetches to this server only.
 * xterm.js themes its terminal with `<style>` elements it makes at run time, so styles may be
 * inline (scripts may not); noVNC draws its cursor as a `data:` image.
 */
const PAGE_CSP = {
  'default-src': ["'none'"],
  'script-src': ["'self'"],
  'style-src': ["'self'", "'unsafe-inline'"],
  'img-src': ["'self'", 'data:'],
  'font-src': ["'self'"],
  'connect-src': ["'self'"],
  'base-uri': ["'none'"],
  'form-action': ["'none'"],
  'frame-ancestors': ["'none'"],
} as const;
const setPageHeaders = securityHeaders(PAGE_CSP);

function sendHtml(request: FastifyRequest, reply: FastifyReply, page: Html, status: number) {
  setPageHeaders(request, reply);
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(page.text);
}

const KINDS: readonly ConsoleKind[] = ['serial', 'vnc'];

/**
 * Whether a WebSocket request comes from a page of this server: a browser always sends `Origin`
 * on a WebSocket, and another site's page must not drive a console through the customer's
 * session (the SameSite cookie is the first guard, this the second). Clients that are not
 * browsers send no Origin and pass on the session alone.
 */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

/**
 * A service's console in the browser: the page a one-time link opens (SERVICE_CONSOLE/<token>),
 * its files (SERVICE_CONSOLE/assets/<version>/...), and a WebSocket per console kind
 * (SERVICE_CONSOLE/ws/serial, /ws/vnc), each checking the session's cookie before it upgrades.
 */
export function registerServiceConsoleRoutes(app: App, ctx: AppContext, options: ConsoleOptions = {}): void {
  const { consoles } = options;
  app.register(fastifyCookie);
  app.register(fastifyWebsocket, { options: { maxPayload: 1024 * 1024 } });
  // Registered after the WebSocket plugin has loaded, so that it sees the routes.
  app.register(namedPlugin('serviceConsolePages', async (scope: App) => routes(scope, ctx, consoles)));
}

function routes(app: App, ctx: AppContext, consoles: ServiceConsoles | undefined): void {
  const { db } = ctx.store;
  /** Each upgraded request's session, and the hash of its secret to read it again by. */
  const sessions = new WeakMap<FastifyRequest, { session: ConsoleLinkSession; hash: string }>();

  app.get(
    `${SERVICE_CONSOLE}/assets/:version/*`,
    { schema: { params: Type.Object({ version: Type.String(), '*': Type.String() }) } },
    async (request, reply) => {
      const assets = await consoleAssets();
      const file =
        request.params.version === assets.version ? assets.files.get(request.params['*']) : undefined;
      if (!file) throw new ApiError('not_found', 'No such file of the console');
      return reply
        .type(file.type)
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('x-content-type-options', 'nosniff')
        .send(file.body);
    },
  );

  app.get(
    `${SERVICE_CONSOLE}/:token`,
    { schema: { params: Type.Object({ token: Type.String({ maxLength: 200 }) }) } },
    async (request, reply) => {
      const refuse = (status: number, title: string, text: string) =>
        sendHtml(request, reply, refusalPage(title, text), status);
      if (!consoles) {
        return refuse(
          503,
          'Console not available',
          'This server cannot show consoles. Ask for a new link later.',
        );
      }
      const token = request.params.token;
      const secret = randomBytes(32).toString('base64url');
      const now = ctx.clock.now();
      const session = SECRET_PATTERN.test(token)
        ? await openConsoleLink(db, {
            tokenHash: hashSecret(token),
            sessionHash: hashSecret(secret),
            now,
            sessionUntil: now + ctx.config.serviceConsoleMaxMs,
          })
        : undefined;
      if (!session) {
        return refuse(
          403,
          'Link used or expired',
          'This console link was already used or has expired (a link opens once, within 60 seconds, and ends when the server leaves running or rescue). Ask for a new one.',
        );
      }
      const service = await findService(db, session.serviceId);
      if (!service || !CONSOLE_STATUSES.has(service.status)) {
        return refuse(
          403,
          'No console now',
          `The server is ${service?.status ?? 'gone'}: its console is open while it is running or in rescue.`,
        );
      }
      const kinds = await consoles.consoles(service.id).catch((): readonly ConsoleKind[] => []);
      const assets = await consoleAssets();
      reply.setCookie(SESSION_COOKIE, secret, {
        path: `${SERVICE_CONSOLE}/`,
        httpOnly: true,
        sameSite: 'strict',
        secure: isHttps(request),
        maxAge: Math.ceil(ctx.config.serviceConsoleMaxMs / 1000),
      });
      const page = consolePage({
        assets: `${SERVICE_CONSOLE}/assets/${assets.version}`,
        domain: service.domainName,
        kinds: KINDS.filter((k) => kinds.includes(k)),
        sessionUntil: new Date(session.sessionUntil).toISOString(),
      });
      return sendHtml(request, reply, page, 200);
    },
  );

  for (const kind of KINDS) {
    app.get(
      `${SERVICE_CONSOLE}/ws/${kind}`,
      {
        websocket: true,
        // Before the upgrade: a request without a live session, for a service without this
        // console now, gets an HTTP refusal and never a byte of the console.
        preValidation: async (request) => {
          if (!consoles) throw new ApiError('console_unavailable', 'The console is not available here');
          if (!sameOrigin(request)) {
            throw new ApiError('console_origin_refused', 'A console opens only from its own page');
          }
          const secret = request.cookies[SESSION_COOKIE];
          const hash = secret !== undefined && SECRET_PATTERN.test(secret) ? hashSecret(secret) : undefined;
          const session =
            hash === undefined ? undefined : await findConsoleLinkSession(db, hash, ctx.clock.now());
          if (!session) {
            throw new ApiError(
              'invalid_token',
              'No console session, or it has ended: open a new console link',
            );
          }
          const service = await findService(db, session.serviceId);
          if (!service || !CONSOLE_STATUSES.has(service.status)) {
            throw new ApiError('invalid_state', `The service is ${service?.status ?? 'gone'}`);
          }
          let kinds: readonly ConsoleKind[];
          try {
            kinds = await consoles.consoles(service.id);
          } catch (err) {
            throw new ApiError('console_unavailable', 'The server’s host does not answer', { cause: err });
          }
          if (!kinds.includes(kind))
            throw new ApiError('not_found', `This server has no ${kind} console now`);
          if (hash !== undefined) sessions.set(request, { session, hash });
        },
      },
      (socket, request) => {
        const { session, hash } = sessions.get(request) ?? {};
        if (!session || hash === undefined || !consoles) return socket.close(1011, 'No session');
        bridgeConsole({
          socket,
          kind,
          open: () => consoles.openConsole(session.serviceId, kind),
          check: async () => {
            const now = ctx.clock.now();
            const ended = { code: CLOSE_SESSION_ENDED, reason: 'The console session has ended' };
            if (now >= session.sessionUntil) return ended;
            const service = await findService(db, session.serviceId);
            if (!service || !CONSOLE_STATUSES.has(service.status))
              return { code: CLOSE_SERVICE_LEFT, reason: `The server is ${service?.status ?? 'gone'} now` };
            // Ended by what ends sessions (migrations/035), the service's status aside.
            if (!(await findConsoleLinkSession(db, hash, now))) return ended;
            return undefined;
          },
          pollMs: POLL_MS,
          clock: ctx.clock,
          sessionUntil: session.sessionUntil,
          log: request.log,
        });
      },
    );
  }
}
