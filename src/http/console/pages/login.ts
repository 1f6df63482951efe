import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { guardAttempt } from '../../../auth/attempt-guard.ts';
import type { FailureThrottle } from '../../../auth/failure-throttle.ts';
import type { OperatorLogin } from '../../../auth/operators.ts';
import { AttemptRefused, type SlowCheckGate } from '../../../auth/slow-check-gate.ts';
import { codeRefusal, type TwoFactor } from '../../../auth/two-factor.ts';
import type { AppContext } from '../../../context.ts';
import { recordAudit } from '../../../store/repos/audit.ts';
import type { App } from '../../app-type.ts';
import { CONSOLE } from '../../base-path.ts';
import { isFields } from '../../fields.ts';
import { consoleAudit } from '../../plugins/audit.ts';
import {
  type ConsoleRouter,
  consolePath,
  redirect,
  SESSION_COOKIE,
  sendPage,
  TWO_FACTOR_PAGE,
  takeFlash,
} from '../console-router.ts';
import { clearConsoleCookie, setConsoleCookie } from '../cookies.ts';
import { type Html, html } from '../html.ts';
import { type Flash, page } from '../layout.ts';
import type { ConsoleSessions } from '../sessions.ts';

/** The login form's own CSRF token (double submit: a cookie and the same value in the form). */
const LOGIN_COOKIE = 'vrp_console_login';
const LOGIN_TOKEN = /^[A-Za-z0-9_-]{32}$/;

export interface LoginOptions {
  readonly sessions: ConsoleSessions;
  readonly login: OperatorLogin;
  readonly throttle: FailureThrottle;
  /** Bounds the password hashes running at once (LOGIN_HASH_LIMITS in the console). */
  readonly gate: SlowCheckGate;
  readonly twoFactor: TwoFactor;
  /**
   * Second-factor codes, per operator: as passwords, 5 wrong in a row lock the operator's second
   * step for a while that doubles (whoever types them, from wherever).
   */
  readonly codeThrottle: FailureThrottle;
  /** Bounds the recovery-code hashes at once, per operator. */
  readonly codeGate: SlowCheckGate;
  /** VRP_CONSOLE_REQUIRE_2FA: an operator without two-factor login must enrol before anything else. */
  readonly requireTwoFactor: boolean;
}

/**
 * The console login's bound on password hashes at once (PASSWORD_COST: 128 MiB and 0.5-1 s of
 * CPU each): two in the process, one per source address; up to 16 wait in all, 4 per address.
 */
export const LOGIN_HASH_LIMITS = Object.freeze({ total: 2, perKey: 1, queue: 16, perKeyQueue: 4 });

function loginPage(
  token: string,
  next: string | undefined,
  o: { name?: string; error?: string; flash?: Flash },
): Html {
  const error = o.error && html`<p class="flash flash-error" role="alert" id="login-error">${o.error}</p>`;
  return page({
    title: 'Log in',
    flash: o.flash,
    body: html`${error}
<form method="post" action="${CONSOLE}/login" class="login"${o.error ? html` aria-describedby="login-error"` : ''}>
  <input type="hidden" name="_csrf" value="${token}">
  ${next && html`<input type="hidden" name="next" value="${next}">`}
  <label for="name">Operator name</label>
  <input id="name" name="name" autocomplete="username" required maxlength="100" value="${o.name ?? ''}"${o.name ? '' : html` autofocus`}>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="2048"${o.name ? html` autofocus` : ''}>
  <button type="submit">Log in</button>
</form>`,
  });
}

function codePage(token: string, next: string | undefined, o: { error?: string; flash?: Flash }): Html {
  const error = o.error && html`<p class="flash flash-error" role="alert" id="code-error">${o.error}</p>`;
  return page({
    title: 'Two-factor login',
    flash: o.flash,
    body: html`${error}
<form method="post" action="${CONSOLE}/login/code" class="login"${o.error ? html` aria-describedby="code-error"` : ''}>
  <input type="hidden" name="_csrf" value="${token}">
  ${next && html`<input type="hidden" name="next" value="${next}">`}
  <label for="code">Code from your authenticator app, or a recovery code</label>
  <input id="code" name="code" autocomplete="one-time-code" required maxlength="40" autofocus>
  <button type="submit">Continue</button>
</form>
<p>Lost your phone? A recovery code works once; an operator on the server can remove two-factor login with <code>vrp operator reset-2fa NAME</code>.</p>`,
  });
}

/** What a refused attempt says (a lock-out, too many at once). */
function refusalText(err: AttemptRefused, what: string): string {
  return err.reason === 'locked_out'
    ? `Too many failed ${what}. Try again in ${err.retryAfter} seconds.`
    : err.reason === 'address_busy'
      ? `Too many logins at once from your address. Try again in ${err.retryAfter} seconds.`
      : `Too many logins at once. Try again in ${err.retryAfter} seconds.`;
}

function field(request: FastifyRequest, name: string): string | undefined {
  const value = isFields(request.body) ? request.body[name] : undefined;
  return typeof value === 'string' ? value : undefined;
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The login form's token of this browser, set as a cookie when it has none yet. */
function loginToken(request: FastifyRequest, reply: FastifyReply): string {
  const held = request.cookies[LOGIN_COOKIE];
  if (held && LOGIN_TOKEN.test(held)) return held;
  const token = randomBytes(24).toString('base64url');
  setConsoleCookie(reply, LOGIN_COOKIE, token);
  return token;
}

/** The form carries this browser's login token and, if the browser says, comes from the console. */
function fromLoginForm(request: FastifyRequest, token: string): boolean {
  const given = field(request, '_csrf');
  const origin = request.headers.origin;
  return (
    (origin === undefined || consolePath(`${origin}${CONSOLE}/`, request.host) !== undefined) &&
    given !== undefined &&
    sameToken(given, token)
  );
}

/**
 * GET/POST `CONSOLE/login`, GET/POST `CONSOLE/login/code` and POST `CONSOLE/logout`. A wrong name or password gets one answer,
 * whichever it was (and, from auth/operators.ts, in the same time); five in a row from one
 * address lock it out for a while that doubles, counted before each hash so that logins sent at
 * once cannot all pass; the hashes at once are bounded (LOGIN_HASH_LIMITS). Logins and logouts
 * are audited.
 *
 * An operator enrolled in two-factor login gets, for the right password, a session that is only
 * half a login (stage `code`, five minutes): its cookie opens nothing but `login/code`, where a
 * code of the authenticator app or a recovery code completes it; the half login then ends and a
 * new session (a new secret) begins. Codes are throttled per operator as passwords are per
 * address. With VRP_CONSOLE_REQUIRE_2FA an operator not enrolled gets a session that opens only
 * the enrolment page (stage `enrol`).
 */
export function registerLoginRoutes(app: App, ctx: AppContext, router: ConsoleRouter, o: LoginOptions): void {
  const nextOf = (request: FastifyRequest, value: string | undefined) => consolePath(value, request.host);

  app.get('/login', async (request, reply) => {
    const asked = isFields(request.query) ? request.query['next'] : undefined;
    const next = nextOf(request, typeof asked === 'string' ? asked : undefined);
    const secret = request.cookies[SESSION_COOKIE];
    const session = secret ? await o.sessions.find(secret) : undefined;
    if (session?.stage === 'ok') return redirect(request, reply, { redirect: next ?? `${CONSOLE}/` });
    if (session?.stage === 'enrol') return redirect(request, reply, { redirect: TWO_FACTOR_PAGE });
    const flash = takeFlash(request, reply);
    return sendPage(reply, loginPage(loginToken(request, reply), next, { flash }));
  });

  app.post('/login', async (request, reply) => {
    const next = nextOf(request, field(request, 'next'));
    const name = field(request, 'name') ?? '';
    const password = field(request, 'password') ?? '';
    const token = loginToken(request, reply);
    if (!fromLoginForm(request, token)) {
      const error = 'This form has expired or did not come from the console. Try again.';
      return sendPage(reply, loginPage(token, next, { name, error }), 403);
    }
    const now = ctx.clock.now();
    const wait = o.throttle.retryAfter(request.ip, now);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      const error = `Too many failed logins from your address. Try again in ${wait} seconds.`;
      return sendPage(reply, loginPage(token, next, { name, error }), 429);
    }
    // The attempt is counted before its hash and settled after it (auth/attempt-guard.ts).
    const attempt = guardAttempt(o.throttle, o.gate, request.ip, () => ctx.clock.now());
    let operator: Awaited<ReturnType<OperatorLogin['verify']>>;
    try {
      operator = await o.login.verify(name, password, attempt.slowCheck);
    } catch (err) {
      attempt.release();
      if (!(err instanceof AttemptRefused)) throw err;
      reply.header('retry-after', String(err.retryAfter));
      const error = refusalText(err, 'logins from your address');
      return sendPage(reply, loginPage(token, next, { name, error }), err.status);
    }
    if (!operator) {
      attempt.fail(ctx.clock.now());
      request.log.warn({ ip: request.ip }, 'console: failed login');
      return sendPage(
        reply,
        loginPage(token, next, { name, error: 'Wrong operator name or password.' }),
        401,
      );
    }
    attempt.succeed();
    const twoFactor = await o.twoFactor.status(operator.id);
    if (twoFactor.enrolled) {
      // Half a login: its cookie opens only the code's page.
      setConsoleCookie(reply, SESSION_COOKIE, await o.sessions.start(operator.id, 'code'));
      const query = next ? `?next=${encodeURIComponent(next)}` : '';
      return redirect(request, reply, { redirect: `${CONSOLE}/login/code${query}` });
    }
    const stage = o.requireTwoFactor ? 'enrol' : 'ok';
    await completeLogin(request, reply, { id: operator.id, name: operator.name }, stage);
    return redirect(request, reply, {
      redirect: stage === 'enrol' ? TWO_FACTOR_PAGE : (next ?? `${CONSOLE}/`),
    });
  });

  async function completeLogin(
    request: FastifyRequest,
    reply: FastifyReply,
    operator: { readonly id: string; readonly name: string },
    stage: 'ok' | 'enrol',
  ): Promise<void> {
    const secret = await o.sessions.start(operator.id, stage);
    const audit = consoleAudit(
      request,
      {
        kind: 'console',
        operatorId: operator.id,
        operatorName: operator.name,
        sessionId: o.sessions.idOf(secret),
      },
      'console.login',
    );
    await recordAudit(
      ctx.store.db,
      audit,
      { target: { type: 'operator', id: operator.id } },
      ctx.clock.now(),
    );
    setConsoleCookie(reply, SESSION_COOKIE, secret);
  }

  /** The half login of this browser, waiting for its second factor. */
  async function pendingLogin(request: FastifyRequest) {
    const secret = request.cookies[SESSION_COOKIE];
    const session = secret ? await o.sessions.find(secret) : undefined;
    return session?.stage === 'code' && secret ? { session, secret } : undefined;
  }

  const expired = { kind: 'error' as const, text: 'Your login has expired. Log in again.' };

  app.get('/login/code', async (request, reply) => {
    const asked = isFields(request.query) ? request.query['next'] : undefined;
    const next = nextOf(request, typeof asked === 'string' ? asked : undefined);
    if (!(await pendingLogin(request))) return redirect(request, reply, { redirect: `${CONSOLE}/login` });
    const flash = takeFlash(request, reply);
    return sendPage(reply, codePage(loginToken(request, reply), next, { flash }));
  });

  app.post('/login/code', async (request, reply) => {
    const next = nextOf(request, field(request, 'next'));
    const token = loginToken(request, reply);
    if (!fromLoginForm(request, token)) {
      const error = 'This form has expired or did not come from the console. Try again.';
      return sendPage(reply, codePage(token, next, { error }), 403);
    }
    const pending = await pendingLogin(request);
    if (!pending) return redirect(request, reply, { redirect: `${CONSOLE}/login`, flash: expired });
    const operatorId = pending.session.operatorId;
    const wait = o.codeThrottle.retryAfter(operatorId, ctx.clock.now());
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      const error = `Too many wrong codes. Try again in ${wait} seconds.`;
      return sendPage(reply, codePage(token, next, { error }), 429);
    }
    const attempt = guardAttempt(o.codeThrottle, o.codeGate, operatorId, () => ctx.clock.now());
    let check: Awaited<ReturnType<TwoFactor['verify']>>;
    try {
      check = await o.twoFactor.verify(
        operatorId,
        field(request, 'code') ?? '',
        ctx.clock.now(),
        attempt.slowCheck,
      );
    } catch (err) {
      attempt.release();
      if (!(err instanceof AttemptRefused)) throw err;
      reply.header('retry-after', String(err.retryAfter));
      return sendPage(reply, codePage(token, next, { error: refusalText(err, 'codes') }), err.status);
    }
    if (!check.ok) {
      attempt.fail(ctx.clock.now());
      request.log.warn({ ip: request.ip, reason: check.reason }, 'console: second factor refused');
      return sendPage(reply, codePage(token, next, { error: codeRefusal(check.reason) }), 401);
    }
    attempt.succeed();
    // The half login ends; the whole one gets a secret of its own.
    await o.sessions.end(pending.secret);
    await completeLogin(request, reply, { id: operatorId, name: pending.session.operatorName }, 'ok');
    const left =
      check.kind === 'recovery' ? (await o.twoFactor.status(operatorId)).recoveryCodesLeft : undefined;
    const flash =
      left === undefined
        ? undefined
        : { kind: 'ok' as const, text: `You logged in with a recovery code; ${left} left.` };
    return redirect(request, reply, { redirect: next ?? `${CONSOLE}/`, ...(flash && { flash }) });
  });

  router.action(
    '/logout',
    async (call) => {
      const secret = call.request.cookies[SESSION_COOKIE] ?? '';
      await o.sessions.end(secret);
      const { session } = call;
      const audit = consoleAudit(
        call.request,
        {
          kind: 'console',
          operatorId: session.operatorId,
          operatorName: session.operatorName,
          sessionId: session.id,
        },
        'console.logout',
      );
      await recordAudit(
        ctx.store.db,
        audit,
        { target: { type: 'operator', id: call.session.operatorId } },
        ctx.clock.now(),
      );
      clearConsoleCookie(call.reply, SESSION_COOKIE);
      return { redirect: `${CONSOLE}/login`, flash: { kind: 'ok', text: 'You have logged out.' } };
    },
    { enrol: true },
  );
}
