import type { FastifyError } from 'fastify';
import { createFailureThrottle } from '../../auth/failure-throttle.ts';
import { createOperatorLogin } from '../../auth/operators.ts';
import type { AppContext } from '../../context.ts';
import type { App } from '../app.ts';
import { registerConsoleAssets } from './assets.ts';
import { createConsoleRouter, FormError, sendPage } from './console-router.ts';
import { html } from './html.ts';
import { page } from './layout.ts';
import { registerAuditPage } from './pages/audit.ts';
import { registerHostsPage } from './pages/hosts.ts';
import { registerLoginRoutes } from './pages/login.ts';
import { registerOverviewPage } from './pages/overview.ts';
import { registerResellerPages } from './pages/reseller.ts';
import { registerResellersPages } from './pages/resellers.ts';
import { registerUsagePages } from './pages/usage.ts';
import { createConsoleSessions } from './sessions.ts';

/** Forms are small: a quota, a search, a password. */
const FORM_LIMIT = 64 * 1024;

/**
 * What every console answer says to the browser: load nothing from anywhere but this server, run
 * no inline script, never be framed, send no Referer elsewhere, keep no copy of a page.
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
} as const;

/**
 * The operator console (CONTRACT.md section 12; docs/console.md): server-rendered pages under
 * CONSOLE, a login with a session cookie, and forms that act through the operator API
 * (./ops-client.ts), so the console holds no rule of its own.
 */
export function registerConsoleRoutes(app: App, ctx: AppContext): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_LIMIT },
    (_req, body, done) => {
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of new URLSearchParams(body as string)) {
        const prev = out[k];
        out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
      }
      done(null, out);
    },
  );
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: FORM_LIMIT }, (_req, body, done) => {
    if ((body as Buffer).length === 0) return done(null, undefined);
    const err = new FormError('The console reads forms only');
    err.statusCode = 415;
    done(err, undefined);
  });
  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(SECURITY_HEADERS);
  });
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const status = err.statusCode ?? 500;
    if (status >= 500) request.log.error({ err }, 'console page failed');
    const text =
      status >= 500 ? 'Something went wrong on the server. It has been logged; try again.' : err.message;
    const title = status >= 500 ? 'Server error' : 'Refused';
    return sendPage(reply, page({ title, body: html`<p class="error" role="alert">${text}</p>` }), status);
  });

  const sessions = createConsoleSessions({
    db: ctx.store.db,
    clock: ctx.clock,
    signer: ctx.signer,
    sessionMs: ctx.config.consoleSessionMs,
    idleMs: ctx.config.consoleIdleMs,
  });
  const router = createConsoleRouter(app, sessions);
  registerConsoleAssets(app);
  registerLoginRoutes(app, ctx, router, {
    sessions,
    login: createOperatorLogin(ctx.store.db),
    // Per source address, as the token endpoint: 5 wrong passwords, then a wait that doubles.
    throttle: createFailureThrottle(),
  });
  registerOverviewPage(router);
  registerResellersPages(router);
  registerResellerPages(router);
  registerHostsPage(router);
  registerUsagePages(router, ctx.clock);
  registerAuditPage(router);
}
