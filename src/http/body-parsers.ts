import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.ts';

/**
 * The API reads JSON and nothing else (CONTRACT.md section 4). An empty body of any type is no
 * body (billing modules send `Content-Type: application/json` or a form type on POSTs without
 * one); any other body is 415, rather than text Fastify would hand to validation as a string.
 */
export function registerJsonOnly(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new ApiError('validation_failed', 'The body is not valid JSON'), undefined);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => {
    if ((body as Buffer).length === 0) return done(null, undefined);
    done(new ApiError('unsupported_media_type', 'Send the body as application/json'), undefined);
  });
}

/** RFC 6749's form body, for the token endpoint's scope only; a repeated field becomes a list. */
export function registerFormParser(scope: FastifyInstance): void {
  scope.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_req, body, done) => {
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of new URLSearchParams(body as string)) {
        const prev = out[k];
        out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
      }
      done(null, out);
    },
  );
}
