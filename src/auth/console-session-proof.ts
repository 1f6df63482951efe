import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The console acts through the operator API with requests injected into the same process. So
 * that the audit log can name the console session behind such a request (and not just the
 * operator's client), the console adds the session's id with an HMAC that binds it to the
 * operator's client; a caller from outside cannot make one, so a header it sends is ignored.
 */
export const CONSOLE_SESSION_HEADER = 'x-vrp-console-session';

const mac = (key: Buffer, sessionId: string, clientId: string) =>
  createHmac('sha256', key).update(`vrp console session\0${sessionId}\0${clientId}`).digest('base64url');

/** The header's value for a session of the operator whose client is `clientId`. */
export function consoleSessionProof(key: Buffer, sessionId: string, clientId: string): string {
  return `${sessionId}.${mac(key, sessionId, clientId)}`;
}

/** The session id a header's value proves for `clientId`; undefined if it proves none. */
export function provenConsoleSession(key: Buffer, value: unknown, clientId: string): string | undefined {
  if (typeof value !== 'string') return undefined;
  const [sessionId, given, ...rest] = value.split('.');
  if (!sessionId || !/^[0-9a-f]{64}$/.test(sessionId) || given === undefined || rest.length > 0)
    return undefined;
  const a = Buffer.from(given);
  const b = Buffer.from(mac(key, sessionId, clientId));
  return a.length === b.length && timingSafeEqual(a, b) ? sessionId : undefined;
}
