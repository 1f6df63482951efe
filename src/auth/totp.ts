/**
 * The console's second factor: TOTP as RFC 6238 sets it out, with the settings every
 * authenticator app reads from a QR code (SHA-1, 30 s steps, 6 digits). The arithmetic is
 * otpauth's; the rules of this server are here: one step of drift either way, and a code is
 * accepted only for a step later than the last one accepted (each code is used once).
 */
import { Secret, TOTP } from 'otpauth';

/** RFC 6238's defaults, which authenticator apps assume. */
export const TOTP_PERIOD_S = 30;
export const TOTP_DIGITS = 6;
const ALGORITHM = 'SHA1';
/** Steps of drift allowed either way between the server's clock and the phone's. */
const DRIFT_STEPS = 1;

/** What a TOTP code looks like (typed with spaces perhaps: `123 456`). */
export const TOTP_CODE = /^\d{6}$/;

/** A new secret, base32 (160 bits, RFC 4226's recommended length). */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The time step of `nowMs`. */
export function totpStep(nowMs: number): number {
  return Math.floor(nowMs / 1000 / TOTP_PERIOD_S);
}

/** The code of `secret` (base32) at `nowMs`: what an authenticator app shows then. */
export function totpCode(secret: string, nowMs: number): string {
  return TOTP.generate({
    secret: Secret.fromBase32(secret),
    algorithm: ALGORITHM,
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_S,
    timestamp: nowMs,
  });
}

/**
 * The step `code` belongs to, if it is the code of `secret` at the step of `nowMs` or one step
 * either side, and that step is after `lastStep` (the last accepted); undefined otherwise.
 */
export function matchTotp(
  secret: string,
  code: string,
  nowMs: number,
  lastStep: number | null,
): number | undefined {
  if (!TOTP_CODE.test(code)) return undefined;
  const key = Secret.fromBase32(secret);
  const current = totpStep(nowMs);
  for (let step = current - DRIFT_STEPS; step <= current + DRIFT_STEPS; step += 1) {
    if (lastStep !== null && step <= lastStep) continue;
    const delta = TOTP.validate({
      token: code,
      secret: key,
      algorithm: ALGORITHM,
      digits: TOTP_DIGITS,
      period: TOTP_PERIOD_S,
      timestamp: step * TOTP_PERIOD_S * 1000,
      window: 0,
    });
    if (delta === 0) return step;
  }
  return undefined;
}

/** The `otpauth://` URI an authenticator app reads from the QR code. */
export function totpUri(secret: string, issuer: string, account: string): string {
  return new TOTP({
    issuer,
    label: account,
    secret: Secret.fromBase32(secret),
    algorithm: ALGORITHM,
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_S,
  }).toString();
}
