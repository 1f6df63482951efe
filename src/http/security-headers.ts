import type { FastifyReply, FastifyRequest } from 'fastify';
import helmet from 'helmet';

/** Whether the request reached us over https (directly, or through a proxy that says so). */
export function isHttps(request: FastifyRequest): boolean {
  return request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https';
}

/** A Content-Security-Policy as directives, `default-src` required: `{ 'default-src': ["'self'"] }`. */
export type CspDirectives = Readonly<Record<string, readonly string[]>>;

/** HSTS, over https only: a year, this host only (its subdomains are not this server's to pin). */
const HSTS = { maxAge: 365 * 24 * 3600, includeSubDomains: false } as const;

/**
 * The security headers of an HTML page of ours (the console's, the API reference), set by helmet
 * with `csp` as the whole Content-Security-Policy (no defaults merged in), `X-Frame-Options: DENY`
 * and `Referrer-Policy: same-origin`; helmet's other headers as it sends them (nosniff,
 * Cross-Origin-Opener-Policy and Cross-Origin-Resource-Policy `same-origin`,
 * Origin-Agent-Cluster, X-DNS-Prefetch-Control off, the legacy ones). Strict-Transport-Security
 * only when the request came over https (RFC 6797 section 7.2: never over plain http, where a
 * browser ignores it anyway). Cache-Control is the caller's. Returns a function that sets them on
 * a reply (on the raw response, as helmet does; Fastify sends both).
 *
 * helmet itself rather than @fastify/helmet: that plugin sets the headers only from an onRequest
 * hook of the scope it is registered in, and offers no other way to set them, so the console's
 * error pages for requests that the app's first hooks refuse (an unknown address, a wrong method,
 * shutting down) would go out without them; nor can it choose HSTS by the request's protocol.
 */
export function securityHeaders(csp: CspDirectives): (request: FastifyRequest, reply: FastifyReply) => void {
  const options = {
    contentSecurityPolicy: { useDefaults: false, directives: csp },
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'same-origin' },
  } as const;
  const overHttp = helmet({ ...options, strictTransportSecurity: false });
  const overHttps = helmet({ ...options, strictTransportSecurity: HSTS });
  const done = (err?: unknown) => {
    if (err) throw err;
  };
  return (request, reply) => (isHttps(request) ? overHttps : overHttp)(request.raw, reply.raw, done);
}
