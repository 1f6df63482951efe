import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../domain/errors.ts';
import { findUnstorableText, unstorableTextMessage } from '../../domain/storable-text.ts';

/**
 * Refuses a request whose body, query or path parameters (keys included) hold text a store
 * cannot keep as given, before any route sees it: PostgreSQL would refuse U+0000 only when a
 * job saves it, and retry that job for ever. A hook of every route, so no route can forget it,
 * except the token endpoint: it stores nothing it is sent, and must answer a client_id no
 * client can have as a failed authentication that the guessing throttle counts
 * (auth/client-authenticator.ts), not as a malformed request.
 */
export const storableInput = fp(
  (app, _options, done) => {
    const check = (request: FastifyRequest, _reply: FastifyReply, next: HookHandlerDoneFunction) => {
      const parts = [
        ['body', request.body],
        ['query', request.query],
        ['params', request.params],
      ] as const;
      for (const [where, value] of parts) {
        const path = findUnstorableText(value, where);
        if (path !== undefined) return next(new ApiError('validation_failed', unstorableTextMessage(path)));
      }
      next();
    };
    // A hook of every route but the token endpoint, added as each is registered (so no request
    // reads its route's config), before the route's own. A request no route matches is refused
    // before it is read (not-found.ts).
    app.addHook('onRoute', (route) => {
      if (route.config?.oauth) return;
      route.preValidation = [check, ...[route.preValidation ?? []].flat()];
    });
    done();
  },
  { name: 'vrp-storable-input' },
);
