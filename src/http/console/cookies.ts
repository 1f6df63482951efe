import type { FastifyReply } from 'fastify';
import { CONSOLE } from '../base-path.ts';
import { isHttps } from '../security-headers.ts';

/**
 * The attributes of every console cookie: `HttpOnly` (no script reads it), `SameSite=Strict` (no
 * other site's page sends it), the console's path, `Secure` when the console is served over https.
 * The cookies themselves are @fastify/cookie's (registered in the console's scope: it parses
 * `request.cookies`, a repeated name keeping its first value, and writes `Set-Cookie`).
 */
function attributes(reply: FastifyReply) {
  return { path: CONSOLE, httpOnly: true, sameSite: 'strict', secure: isHttps(reply.request) } as const;
}

/**
 * Sets a console cookie; `maxAge` in seconds, without it a session cookie (gone when the browser
 * closes). `value` must be a cookie-octet token (the console's are base64url).
 */
export function setConsoleCookie(reply: FastifyReply, name: string, value: string, maxAge?: number): void {
  reply.setCookie(name, value, maxAge === undefined ? attributes(reply) : { ...attributes(reply), maxAge });
}

/** Deletes a console cookie (`Max-Age=0` and an `Expires` in the past). */
export function clearConsoleCookie(reply: FastifyReply, name: string): void {
  reply.clearCookie(name, attributes(reply));
}
