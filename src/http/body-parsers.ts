import type { FastifyInstance } from 'fastify';

/**
 * A form body (`application/x-www-form-urlencoded`) in `scope` only: RFC 6749's for the token
 * endpoint, the console's forms. A repeated field becomes a list. `bodyLimit` in bytes (default:
 * the app's).
 */
export function registerFormParser(scope: FastifyInstance, options: { bodyLimit?: number } = {}): void {
  scope.addContentTypeParser<string>(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', ...options },
    (_req, body, done) => {
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of new URLSearchParams(body)) {
        const prev = out[k];
        out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
      }
      done(null, out);
    },
  );
}
