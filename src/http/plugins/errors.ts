import fp from 'fastify-plugin';
import type { ErrorAnswer } from '../error-handler.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Errors of this route are RFC 6749 error bodies, not envelopes. */
    oauth?: boolean;
  }
}

/**
 * Every error a route or hook throws is answered by `answer` (the same one Fastify's
 * `frameworkErrors` uses): the envelope of the request's variant, an error_code and X-Request-Id.
 */
export const errorAnswers = fp<{ answer: ErrorAnswer }>(
  (app, { answer }, done) => {
    app.setErrorHandler(answer);
    done();
  },
  { name: 'vrp-errors' },
);
