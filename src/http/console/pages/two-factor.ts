import { guardAttempt } from '../../../auth/attempt-guard.ts';
import type { FailureThrottle } from '../../../auth/failure-throttle.ts';
import { AttemptRefused, type SlowCheckGate } from '../../../auth/slow-check-gate.ts';
import { totpUri } from '../../../auth/totp.ts';
import { codeRefusal, type TwoFactor } from '../../../auth/two-factor.ts';
import type { AppContext } from '../../../context.ts';
import { ApiError } from '../../../domain/errors.ts';
import { recordAudit } from '../../../store/repos/audit.ts';
import { CONSOLE } from '../../base-path.ts';
import { consoleAudit } from '../../plugins/audit.ts';
import { time } from '../components.ts';
import {
  type ConsoleRouter,
  csrfField,
  SESSION_COOKIE,
  sendPage,
  TWO_FACTOR_PAGE,
} from '../console-router.ts';
import { setConsoleCookie } from '../cookies.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import type { ConsoleSessions } from '../sessions.ts';

/** The name authenticator apps show above the operator's name. */
const ISSUER = 'VPS provider console';

export interface TwoFactorPageOptions {
  readonly sessions: ConsoleSessions;
  readonly twoFactor: TwoFactor;
  /** The login's per-operator throttle of codes (pages/login.ts). */
  readonly codeThrottle: FailureThrottle;
  readonly codeGate: SlowCheckGate;
}

/** `ABCDEFGH...` in groups of four, easier to type into an app. */
const grouped = (secret: string) => secret.match(/.{1,4}/g)?.join(' ') ?? secret;

/**
 * `CONSOLE/two-factor`: the signed-in operator's two-factor login. Not enrolled: a QR code (an
 * SVG made here, `two-factor/qr.svg`) and the same secret in text for an authenticator app, and
 * a field for the app's code, which confirms it; the ten recovery codes are then shown once.
 * Enrolled: since when, and how many recovery codes are left. Opens also to an operator who
 * must enrol before anything else (VRP_CONSOLE_REQUIRE_2FA); confirming completes that login.
 */
export function registerTwoFactorPage(router: ConsoleRouter, ctx: AppContext, o: TwoFactorPageOptions): void {
  router.page(
    '/two-factor',
    async (call) => {
      const operatorId = call.session.operatorId;
      const status = await o.twoFactor.status(operatorId);
      if (status.enrolled) {
        const since = status.enrolledAt === undefined ? undefined : new Date(status.enrolledAt).toISOString();
        return call.render({
          title: 'Two-factor login',
          body: html`<p>Two-factor login is on since ${time(since)}. Recovery codes left: <strong id="recovery-left">${status.recoveryCodesLeft}</strong> of 10.</p>
<p>To turn it off or move it to another phone, an operator on the server runs <code>vrp operator reset-2fa ${call.session.operatorName}</code>; you then set it up here again.</p>`,
        });
      }
      const secret = await o.twoFactor.pendingSecret(operatorId, ctx.clock.now());
      if (secret === undefined)
        throw new ApiError('invalid_state', 'Two-factor login was set up meanwhile: reload the page.');
      const required =
        call.session.stage === 'enrol' &&
        html`<p class="flash flash-error" role="alert">Two-factor login is required on this console: set it up to continue.</p>`;
      return call.render({
        title: 'Set up two-factor login',
        body: html`${required}
<ol>
  <li>Scan this QR code with an authenticator app (FreeOTP, Aegis, Google Authenticator, 1Password...):
    <img class="totp-qr" src="${CONSOLE}/two-factor/qr.svg" alt="QR code of the two-factor secret" width="224" height="224"></li>
  <li>Or type the secret into the app: <code id="totp-secret">${grouped(secret)}</code> (time-based, 6 digits, 30 seconds).</li>
  <li>Type the code the app shows now:</li>
</ol>
<form method="post" action="${TWO_FACTOR_PAGE}" class="login">
  ${csrfField(call.csrf)}
  <label for="code">Code from the app</label>
  <input id="code" name="code" autocomplete="one-time-code" inputmode="numeric" required maxlength="20">
  <button type="submit">Turn on two-factor login</button>
</form>`,
      });
    },
    { enrol: true },
  );

  router.page(
    '/two-factor/qr.svg',
    async (call) => {
      const secret = await o.twoFactor.pendingSecret(call.session.operatorId, ctx.clock.now());
      if (secret === undefined) throw new ApiError('not_found', 'Two-factor login is set up already.');
      // Loaded on the first enrolment, not with the process (bench/FINDINGS.md, "Memory at rest").
      const { default: QRCode } = await import('qrcode');
      const svg = await QRCode.toString(totpUri(secret, ISSUER, call.session.operatorName), {
        type: 'svg',
        errorCorrectionLevel: 'M',
        margin: 2,
      });
      return call.reply.type('image/svg+xml; charset=utf-8').send(svg);
    },
    { enrol: true },
  );

  router.action(
    '/two-factor',
    async (call) => {
      const operatorId = call.session.operatorId;
      const refused = (text: string) => ({
        redirect: TWO_FACTOR_PAGE,
        flash: { kind: 'error' as const, text },
      });
      const attempt = guardAttempt(o.codeThrottle, o.codeGate, operatorId, () => ctx.clock.now());
      let result: Awaited<ReturnType<TwoFactor['confirm']>>;
      try {
        result = await attempt.slowCheck(() =>
          o.twoFactor.confirm(operatorId, call.field('code') ?? '', ctx.clock.now()),
        );
      } catch (err) {
        attempt.release();
        if (!(err instanceof AttemptRefused)) throw err;
        return refused(`Too many wrong codes. Try again in ${err.retryAfter} seconds.`);
      }
      if (!result.ok) {
        attempt.fail(ctx.clock.now());
        return refused(
          result.reason === 'wrong'
            ? 'Wrong code: two-factor login is not on. Check the time on your phone and type the code the app shows now.'
            : codeRefusal(result.reason),
        );
      }
      attempt.succeed();
      const now = ctx.clock.now();
      const { session } = call;
      const audit = consoleAudit(
        call.request,
        { kind: 'console', operatorId, operatorName: session.operatorName, sessionId: session.id },
        'console.two_factor_enrol',
      );
      await recordAudit(ctx.store.db, audit, { target: { type: 'operator', id: operatorId } }, now);
      let csrf = call.csrf;
      if (call.session.stage === 'enrol') {
        // The login that had to enrol first is now whole: a new session, with a secret of its own.
        await o.sessions.end(call.request.cookies[SESSION_COOKIE] ?? '');
        const secret = await o.sessions.start(operatorId, 'ok');
        setConsoleCookie(call.reply, SESSION_COOKIE, secret);
        csrf = o.sessions.csrfToken(secret);
      }
      const body = html`<p class="flash flash-ok" role="status">Two-factor login is on.</p>
<h2>Recovery codes</h2>
<p>Each of these codes logs you in once without your phone. Keep them somewhere safe: they are shown only now.</p>
<ol class="recovery-codes" id="recovery-codes">${result.recoveryCodes.map((c) => html`<li><code>${c}</code></li>`)}</ol>
<p><a href="${CONSOLE}/">Continue to the console</a></p>`;
      return sendPage(
        call.reply,
        page({
          title: 'Two-factor login is on',
          body,
          operator: { name: call.session.operatorName, role: call.session.role, csrf },
        }),
      );
    },
    { enrol: true },
  );
}
