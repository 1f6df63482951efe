import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { createFailureThrottle } from '../../auth/failure-throttle.ts';
import { createOperatorLogin } from '../../auth/operators.ts';
import { verifySecret } from '../../auth/secret-hash.ts';
import { createSlowCheckGate } from '../../auth/slow-check-gate.ts';
import { createTwoFactor } from '../../auth/two-factor.ts';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import type { App } from '../app-type.ts';
import { CONSOLE } from '../base-path.ts';
import { HTTPS_REQUIRED, plainHttpRefused } from '../https-only.ts';
import { namedPlugin } from '../named-plugin.ts';
import { targetPath } from '../target-path.ts';
import { registerConsoleAssets } from './assets.ts';
import { createConsoleRouter, FormError, sendPage, setConsoleHeaders } from './console-router.ts';
import { html } from './html.ts';
import { page } from './layout.ts';
import { registerAuditPage } from './pages/audit.ts';
import { registerCatalogPage } from './pages/catalog.ts';
import { registerHostsPage } from './pages/hosts.ts';
import { registerIpPoolsPage } from './pages/ip-pools.ts';
import { registerJobsPage } from './pages/jobs.ts';
import { LOGIN_HASH_LIMITS, registerLoginRoutes } from './pages/login.ts';
import { registerNotificationsPage } from './pages/notifications.ts';
import { registerOverviewPage } from './pages/overview.ts';
import { registerResellerPages } from './pages/reseller.ts';
import { registerResellersPages } from './pages/resellers.ts';
import { registerServicePage } from './pages/service.ts';
import { registerServicesPage } from './pages/services.ts';
import { registerTwoFactorPage } from './pages/two-factor.ts';
import { registerUsagePages } from './pages/usage.ts';
import { createConsoleSessions } from './sessions.ts';

/** Forms are small: a quota, a search, a password. */
const FORM_LIMIT = 64 * 1024;

/**
 * An error as a console page, with the console's headers: the console's own errors, and those
 * Fastify meets before routing a request under the console (a path that is not UTF-8, an id
 * over the router's length), which app.ts hands here rather than to the API's envelope.
 */
export function answerConsoleError(
  err: FastifyError | ApiError,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const status = err instanceof ApiError ? err.status : (err.statusCode ?? 500);
  if (status >= 500) request.log.error({ err }, 'console page failed');
  const text =
    status >= 500 ? 'Something went wrong on the server. It has been logged; try again.' : err.message;
  const title = status >= 500 ? 'Server error' : status === 404 ? 'Not found' : 'Refused';
  return sendPage(reply, page({ title, body: html`<p class="error" role="alert">${text}</p>` }), status);
}

/** Whether a request target (any form) is under the console. */
export function isConsoleTarget(url: string): boolean {
  const path = targetPath(url);
  return path === CONSOLE || path.startsWith(`${CONSOLE}/`);
}

/**
 * The operator console (docs/design/contract.md#operator-console; docs/console.md): server-rendered
 * pages under CONSOLE, a login with a session cookie, and forms that act through the operator API
 * (./ops-client.ts), so the console holds no rule of its own.
 */
export function registerConsoleRoutes(parent: App, ctx: AppContext): void {
  // Under its own prefix, so that it has its own not-found handler: a mistyped console address
  // gets a page, not the API's JSON.
  parent.register(
    namedPlugin('consoleRoutes', async (app: App) => consoleRoutes(app, ctx)),
    { prefix: CONSOLE },
  );
}

function consoleRoutes(app: App, ctx: AppContext): void {
  // Forms only (a repeated field becomes a list: ConsoleCall.field refuses it); the API's JSON
  // parser is not inherited. The cookies are parsed and written by @fastify/cookie (./cookies.ts).
  app.removeAllContentTypeParsers();
  app.register(fastifyFormbody, { bodyLimit: FORM_LIMIT });
  app.addContentTypeParser<Buffer>('*', { parseAs: 'buffer', bodyLimit: FORM_LIMIT }, (_req, body, done) => {
    if (body.length === 0) return done(null, undefined);
    const err = new FormError('The console reads forms only');
    err.statusCode = 415;
    done(err, undefined);
  });
  app.register(fastifyCookie);
  app.addHook('onRequest', (request, reply, done) => {
    setConsoleHeaders(request, reply);
    // Passwords, second-factor codes and the session cookie: https only from outside loopback.
    if (plainHttpRefused(request, ctx.config.allowHttp)) {
      return done(new ApiError('https_required', HTTPS_REQUIRED));
    }
    done();
  });
  // Errors of the framework (a body too large), of the console (a form not ours) and the
  // not-found refusal thrown for every unknown path (../plugins/not-found.ts) become pages.
  app.setNotFoundHandler(async (request) => {
    throw new ApiError('not_found', `There is no page ${request.url.split('?')[0]}`);
  });
  app.setErrorHandler(answerConsoleError);

  const sessions = createConsoleSessions({
    db: ctx.store.db,
    clock: ctx.clock,
    signer: ctx.signer,
    proofKey: ctx.keys.tokenKey,
    sessionMs: ctx.config.consoleSessionMs,
    idleMs: ctx.config.consoleIdleMs,
  });
  const router = createConsoleRouter(app, sessions);
  registerConsoleAssets(app);
  const twoFactor = createTwoFactor({
    db: ctx.store.db,
    secretBox: ctx.secretBox,
    secretCost: ctx.secretCost,
  });
  // Second-factor codes per operator, as passwords per address: 5 wrong, then a wait that doubles.
  const codeThrottle = createFailureThrottle();
  const codeGate = createSlowCheckGate(LOGIN_HASH_LIMITS);
  registerLoginRoutes(app, ctx, router, {
    sessions,
    login: createOperatorLogin(ctx.store.db, verifySecret, ctx.passwordCost),
    // Per source address, as the token endpoint: 5 wrong passwords, then a wait that doubles.
    throttle: createFailureThrottle(),
    gate: createSlowCheckGate(LOGIN_HASH_LIMITS),
    twoFactor,
    codeThrottle,
    codeGate,
    requireTwoFactor: ctx.config.consoleRequire2fa,
  });
  registerTwoFactorPage(router, ctx, { sessions, twoFactor, codeThrottle, codeGate });
  registerOverviewPage(router);
  registerServicesPage(router);
  registerServicePage(router);
  registerJobsPage(router);
  registerResellersPages(router);
  registerResellerPages(router);
  registerHostsPage(router);
  registerIpPoolsPage(router);
  registerCatalogPage(router);
  registerUsagePages(router, ctx.clock);
  registerAuditPage(router);
  registerNotificationsPage(router);
}
