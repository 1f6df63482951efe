import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { ClientState } from '../../auth/client-state.ts';
import type { Scope } from '../../auth/scopes.ts';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';

/** The authenticated caller of an API request. */
export interface Caller {
  readonly clientId: string;
  readonly resellerId: string;
  readonly scopes: readonly Scope[];
  readonly state: ClientState;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook on API routes. */
    caller: Caller | null;
  }
  interface FastifyContextConfig {
    /** The scope an API route needs; routes without it are not enveloped API routes. */
    scope?: Scope;
  }
}

const REALM = 'realm="vps_reseller_provider"';

function invalidToken(description: string): ApiError {
  return new ApiError('invalid_token', description, {
    headers: {
      'www-authenticate': `Bearer ${REALM}, error="invalid_token", error_description="${description}"`,
    },
  });
}

/** The token of an `Authorization: Bearer <token>` header (RFC 6750 section 2.1), if it is one. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header)?.[1];
}

/**
 * RFC 6750 bearer authentication: signature and expiry from the token itself, then the
 * application's current state (enabled, token version) from a cache that is at most
 * a couple of seconds old, so revocation reaches every process quickly.
 */
export async function authenticate(ctx: AppContext, request: FastifyRequest): Promise<Caller> {
  const header = request.headers.authorization;
  if (!header) throw invalidToken('The request has no bearer token');
  const token = bearerToken(header);
  if (token === undefined) throw invalidToken('The Authorization header is not a bearer token');
  const claims = ctx.signer.verify(token, ctx.clock.now());
  if (!claims) throw invalidToken('The access token is invalid or has expired');
  let state = await ctx.clientStates.get(claims.clientId, Date.now());
  if (state && claims.version > state.tokenVersion) {
    // Issued after a rotation this process has not seen yet: read the application again.
    ctx.clientStates.invalidate(claims.clientId);
    state = await ctx.clientStates.get(claims.clientId, Date.now());
  }
  if (!state?.enabled || state.tokenVersion !== claims.version || state.resellerId !== claims.resellerId) {
    throw invalidToken('The access token has been revoked');
  }
  return { clientId: claims.clientId, resellerId: claims.resellerId, scopes: claims.scopes, state };
}

/** 403 unless the caller's token carries `scope`. */
export function requireScope(caller: Caller, scope: Scope): void {
  if (!caller.scopes.includes(scope)) {
    throw new ApiError('insufficient_scope', `This operation needs the scope "${scope}"`, {
      headers: { 'www-authenticate': `Bearer ${REALM}, error="insufficient_scope", scope="${scope}"` },
    });
  }
}

/**
 * Every route that names a scope authenticates its caller and checks the scope, before anything
 * else of the route runs. The hook is added to the route itself when it is registered (its scope
 * is known then), so routes without a scope pay nothing. The caller's application decides the
 * envelope unless the request names one.
 */
export const authentication = fp<{ ctx: AppContext }>(
  async (app, { ctx }) => {
    app.decorateRequest('caller', null);
    const authHook = (scope: Scope) => async (request: FastifyRequest) => {
      const caller = await authenticate(ctx, request);
      request.caller = caller;
      if (request.headers['x-envelope-variant'] === undefined) request.variant = caller.state.variant;
      requireScope(caller, scope);
    };
    app.addHook('onRoute', (route) => {
      const scope = route.config?.scope;
      if (scope) route.onRequest = [...[route.onRequest ?? []].flat(), authHook(scope)];
    });
  },
  { name: 'vrp-authentication', dependencies: ['vrp-envelope-variant'] },
);
