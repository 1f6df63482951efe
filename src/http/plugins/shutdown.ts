import type { FastifyInstance, FastifyPluginCallback } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../domain/errors.ts';

/**
 * Once the app starts closing, requests still arriving (on kept-alive connections) get 503
 * `shutting_down` and `Connection: close`, so the client sends them again to another process.
 *
 * The preClose hook is added to `app` now, not when the returned plugin loads: it must be the
 * first preClose hook, so requests arriving while later ones run are refused too.
 */
export function shutdownGate(app: FastifyInstance): FastifyPluginCallback {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  return fp(
    (scope, _options, done) => {
      scope.addHook('onRequest', (_request, _reply, next) => {
        if (!closing) return next();
        next(
          new ApiError('shutting_down', 'The server is shutting down; send the request again', {
            headers: { connection: 'close', 'retry-after': '1' },
          }),
        );
      });
      done();
    },
    { name: 'vrp-shutdown' },
  );
}
