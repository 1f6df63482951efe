import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../domain/errors.ts';
import { targetPath } from '../target-path.ts';

/**
 * A request no route matches: 405 with `Allow` when the path is a route's but the method is
 * not, else 404. Both are thrown, so the error handler answers them like any other error, and
 * from the first hook, so that nothing of the request (its body above all) is read first: a
 * wrong method is 405 whatever it sends.
 */
export const notFound = fp(
  (app, _options, done) => {
    const routes: { pattern: RegExp; method: string }[] = [];
    app.addHook('onRoute', (route) => {
      // A catch-all (the CORS preflight's OPTIONS *) is no route's path: it allows nothing.
      if (route.url.includes('*')) return;
      const pattern = new RegExp(`^${route.url.replace(/:[A-Za-z_]+/g, '[^/]+').replace(/\/$/, '')}/?$`);
      for (const method of [route.method].flat()) routes.push({ pattern, method });
    });
    const refuse = (request: FastifyRequest): ApiError => {
      const path = targetPath(request.url);
      const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))].filter(
        (m) => m !== 'HEAD',
      );
      if (allowed.length > 0) {
        return new ApiError(
          'method_not_allowed',
          `Method ${request.method} is not allowed here; use ${allowed.join(' or ')}`,
          { headers: { allow: allowed.join(', ') } },
        );
      }
      return new ApiError('not_found', `No route ${request.method} ${path}`);
    };
    app.addHook('onRequest', (request, _reply, next) => next(request.is404 ? refuse(request) : undefined));
    app.setNotFoundHandler(async (request: FastifyRequest) => {
      throw refuse(request);
    });
    done();
  },
  { name: 'vrp-not-found' },
);
