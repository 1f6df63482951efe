import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../domain/errors.ts';
import { isVariant, type Variant } from '../envelope.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The envelope this request is answered in. */
    variant: Variant;
  }
  interface FastifyContextConfig {
    /** The one envelope this route answers in, whatever the request asks (the operator API's B). */
    variant?: Variant;
  }
}

/**
 * The envelope a request is answered in: B unless `X-Envelope-Variant` names one (the
 * authentication hook then sets the caller's own default when the header is absent). On an API
 * route, a header that names neither is refused before anything else of the request runs;
 * routes that answer no envelope (probes, metrics, the token endpoint and its metadata), routes
 * with an envelope of their own (the operator API) and paths no route matches ignore it.
 */
export const envelopeVariant = fp(
  (app, _options, done) => {
    app.decorateRequest('variant', 'B');
    const fromHeader = (request: FastifyRequest, _reply: FastifyReply, next: HookHandlerDoneFunction) => {
      const header = request.headers['x-envelope-variant'];
      if (header === undefined) return next();
      if (!isVariant(header)) {
        return next(new ApiError('invalid_envelope_variant', 'X-Envelope-Variant must be A or B'));
      }
      request.variant = header;
      next();
    };
    // A hook of each route that answers an envelope, chosen when it is registered (its config
    // is known then), before the route's own: routes without one pay nothing, and no request
    // reads its route's config.
    app.addHook('onRoute', (route) => {
      const fixed = route.config?.variant;
      if (!fixed && !route.config?.scope) return;
      const hook = fixed
        ? (request: FastifyRequest, _reply: FastifyReply, next: HookHandlerDoneFunction) => {
            request.variant = fixed;
            next();
          }
        : fromHeader;
      route.onRequest = [hook, ...[route.onRequest ?? []].flat()];
    });
    done();
  },
  { name: 'vrp-envelope-variant' },
);
