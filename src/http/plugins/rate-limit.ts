import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../domain/errors.ts';
import { createRateLimiter } from '../rate-limit.ts';

/**
 * Our token bucket per application (not @fastify/rate-limit: docs/operations.md says why), on
 * every route that names a scope, after authentication has said whose request it is.
 */
export const rateLimit = fp<{ rate: number; burst: number }>(
  (app, { rate, burst }, done) => {
    if (rate > 0) {
      const limiter = createRateLimiter(rate, burst);
      const take = (request: FastifyRequest, _reply: FastifyReply, next: HookHandlerDoneFunction) => {
        // Set on every scoped route by the authentication hook, which runs first.
        const caller = request.caller;
        const wait = caller ? limiter.take(caller.clientId, Date.now()) : 0;
        if (wait <= 0) return next();
        next(
          new ApiError('rate_limited', 'Too many requests; slow down', {
            headers: { 'retry-after': String(Math.ceil(wait / 1000)) },
          }),
        );
      };
      app.addHook('onRoute', (route) => {
        if (route.config?.scope) route.onRequest = [...[route.onRequest ?? []].flat(), take];
      });
    }
    done();
  },
  { name: 'vrp-rate-limit', dependencies: ['vrp-authentication'] },
);
