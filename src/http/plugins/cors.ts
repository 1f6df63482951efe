import fastifyCors from '@fastify/cors';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { BASE } from '../base-path.ts';

/** The request headers a browser page may send: what the SDK sends, and our own X-Request-Id. */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Accept',
  'Idempotency-Key',
  'X-Envelope-Variant',
  'X-Request-Id',
];

/** The answer headers a browser page may read beside the safelisted ones: those the SDK reads, and the rest of ours. */
export const CORS_EXPOSED_HEADERS = [
  'Retry-After',
  'X-Request-Id',
  'X-Job-Id',
  'Idempotent-Replayed',
  'WWW-Authenticate',
];

/** How long a browser may keep a preflight's answer (s): Chromium keeps one at most 2 hours. */
export const CORS_MAX_AGE = 7200;

const METADATA = `/.well-known/oauth-authorization-server${BASE}`;

/** The reseller API's paths (API, token endpoint, its metadata and documents); not the operator API's or the console's. */
function isResellerPath(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return path.startsWith(`${BASE}/`) || path === METADATA || path === `${METADATA}/`;
}

function addVaryOrigin(reply: FastifyReply): void {
  const vary = String(reply.getHeader('vary') ?? '');
  if (!/(^|,)\s*origin\s*(,|$)/i.test(vary)) reply.header('vary', vary ? `${vary}, Origin` : 'Origin');
}

/**
 * CORS for the reseller API, for the origins VRP_CORS_ORIGINS lists (exact matches), with
 * @fastify/cors: a preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered
 * 204 in the first hook, before authentication and the rate limit, which it never reaches; other
 * answers to a listed origin carry Access-Control-Allow-Origin and -Expose-Headers. An origin not
 * listed, a request without one and the operator API and console get no CORS header (an OPTIONS
 * there is answered as before: 405 or 404). Nothing is registered when the list is empty.
 */
export const cors = fp<{ origins: readonly string[] }>(
  async (app, { origins }) => {
    if (origins.length === 0) return;
    const allowed = new Set(origins);
    // Answers of the reseller API differ by Origin whatever it is: a cache must keep them apart.
    app.addHook('onRequest', async (request, reply) => {
      if (isResellerPath(request.url)) addVaryOrigin(reply);
    });
    await app.register(fastifyCors, {
      hook: 'onRequest',
      delegator: (request: FastifyRequest, callback) => {
        const origin = request.headers.origin;
        // An OPTIONS that asks for no method is no preflight: it is answered as before (405).
        const notPreflight =
          request.method === 'OPTIONS' && !request.headers['access-control-request-method'];
        if (!origin || !allowed.has(origin) || !isResellerPath(request.url) || notPreflight) {
          return callback(null, { origin: false });
        }
        callback(null, {
          origin,
          methods: ['GET', 'HEAD', 'POST'],
          allowedHeaders: CORS_ALLOWED_HEADERS,
          exposedHeaders: CORS_EXPOSED_HEADERS,
          maxAge: CORS_MAX_AGE,
        });
      },
    });
  },
  { name: 'vrp-cors' },
);
