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

/**
 * RFC 6750 bearer authentication: signature and expiry from the token itself, then the
 * application's current state (enabled, token version) from a cache that is at most
 * a couple of seconds old, so revocation reaches every process quickly.
 */
export async function authenticate(ctx: AppContext, request: FastifyRequest, scope: Scope): Promise<Caller> {
  const header = request.headers.authorization;
  if (!header) throw invalidToken('The request has no bearer token');
  const m = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header);
  if (!m) throw invalidToken('The Authorization header is not a bearer token');
  const claims = ctx.signer.verify(m[1]!, ctx.clock.now());
  if (!claims) throw invalidToken('The access token is invalid or has expired');
  const state = await ctx.clientStates.get(claims.clientId, Date.now());
  if (!state?.enabled || state.tokenVersion !== claims.version || state.resellerId !== claims.resellerId) {
    throw invalidToken('The access token has been revoked');
  }
  if (!claims.scopes.includes(scope)) {
    throw new ApiError('insufficient_scope', `This operation needs the scope "${scope}"`, {
      headers: { 'www-authenticate': `Bearer ${REALM}, error="insufficient_scope", scope="${scope}"` },
    });
  }
  return { clientId: claims.clientId, resellerId: claims.resellerId, scopes: claims.scopes, state };
}
