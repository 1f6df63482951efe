import type { FastifyRequest } from 'fastify';
import type { Scope } from '../auth/scopes.ts';
import type { AppContext } from '../context.ts';
import { ApiError } from '../domain/errors.ts';
import type { Caller } from './app.ts';

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
