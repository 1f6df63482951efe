import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { CONSOLE_SESSION_HEADER, provenConsoleSession } from '../../auth/console-session-proof.ts';
import type { AppContext } from '../../context.ts';
import type { ApplicationState, OperatorState } from '../../domain/client-state.ts';
import { ApiError } from '../../domain/errors.ts';
import { type Permission, type Role, roleAllows, rolesAllowed } from '../../domain/roles.ts';
import { OPERATOR_SCOPE, type TokenScope } from '../../domain/scopes.ts';

/** A reseller application: it acts in its reseller's tenant. */
export interface ApplicationCaller {
  readonly kind: 'application';
  readonly clientId: string;
  readonly resellerId: string;
  readonly scopes: readonly TokenScope[];
  readonly state: ApplicationState;
}

/** An operator (scope `operator`): it acts across tenants, on the operator API only. */
export interface OperatorCaller {
  readonly kind: 'operator';
  readonly clientId: string;
  readonly operatorId: string;
  readonly operatorName: string;
  /** The console session the request came through (the console's injected requests), if any. */
  readonly consoleSessionId: string | undefined;
  /** The operator's role now (read with its client's state, not from the token). */
  readonly role: Role;
  readonly scopes: readonly TokenScope[];
  readonly state: OperatorState;
}

/** The authenticated caller of an API request; `kind` tells an operator from an application. */
export type Caller = ApplicationCaller | OperatorCaller;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook on API routes. */
    caller: Caller | null;
  }
  interface FastifyContextConfig {
    /**
     * The scope an API route needs; routes without it are not enveloped API routes. Reseller
     * API routes name an application scope, operator routes `operator`.
     */
    scope?: TokenScope;
    /**
     * What an operator route needs of the operator's role (domain/roles.ts); absent: `read`
     * for a GET, `manage` for any other method, so a new route is admin-only until it says otherwise.
     */
    permission?: Permission;
  }
}

const REALM = 'realm="vps_reseller_provider"';

/** 401 `invalid_token` with the RFC 6750 challenge: the token is not (or no longer) good. */
export function invalidToken(description: string): ApiError {
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
  const now = ctx.clock.now();
  // The usual spelling first, without bearerToken's pattern (a third of a µs over a token's
  // ~300 characters): what the signer accepts after `Bearer ` is a token of ours, which its
  // own format check keeps to base64url and dots, so the header is a bearer token as RFC 6750
  // spells one. Any other header goes the pattern's way, as before.
  // A token the usual spelling gave and the signer refused is not verified a second time.
  const usual = header.startsWith('Bearer ') ? header.slice(7) : undefined;
  let claims = usual === undefined ? undefined : ctx.signer.verify(usual, now);
  if (!claims) {
    const token = bearerToken(header);
    if (token === undefined) throw invalidToken('The Authorization header is not a bearer token');
    if (token !== usual) claims = ctx.signer.verify(token, now);
    if (!claims) throw invalidToken('The access token is invalid or has expired');
  }
  let state = await ctx.clientStates.get(claims.clientId, Date.now());
  if (state && claims.version > state.tokenVersion) {
    // Issued after a rotation this process has not seen yet: read the application again.
    ctx.clientStates.invalidate(claims.clientId);
    state = await ctx.clientStates.get(claims.clientId, Date.now());
  }
  if (!state?.enabled || state.tokenVersion !== claims.version) {
    throw invalidToken('The access token has been revoked');
  }
  const { clientId, scopes } = claims;
  // The token endpoint never mixes the kinds; a token that does anyway is not one of ours.
  const operatorScopes = scopes.filter((s) => s === OPERATOR_SCOPE).length;
  if (state.kind === 'application') {
    if (state.resellerId !== claims.resellerId || operatorScopes > 0) {
      throw invalidToken('The access token is invalid or has expired');
    }
    return { kind: 'application', clientId, resellerId: state.resellerId, scopes, state };
  }
  if (claims.resellerId !== '' || operatorScopes !== scopes.length) {
    throw invalidToken('The access token is invalid or has expired');
  }
  const { operatorId, operatorName, role } = state;
  const consoleSessionId = provenConsoleSession(
    ctx.keys.tokenKey,
    request.headers[CONSOLE_SESSION_HEADER],
    clientId,
  );
  return { kind: 'operator', clientId, operatorId, operatorName, consoleSessionId, role, scopes, state };
}

function insufficientScope(scope: TokenScope): ApiError {
  return new ApiError('insufficient_scope', `This operation needs the scope "${scope}"`, {
    headers: { 'www-authenticate': `Bearer ${REALM}, error="insufficient_scope", scope="${scope}"` },
  });
}

/** 403 unless the caller's token carries `scope`. */
function requireScope(caller: Caller, scope: TokenScope): void {
  if (!caller.scopes.includes(scope)) throw insufficientScope(scope);
}

/** 403 `insufficient_role` unless the operator's role allows `permission`. */
export function requireRole(caller: OperatorCaller, permission: Permission): void {
  if (roleAllows(caller.role, permission)) return;
  throw new ApiError(
    'insufficient_role',
    `This operation needs the role ${rolesAllowed(permission).join(' or ')}; this operator is ${caller.role}`,
  );
}

/** The caller of a route that authenticates (its `scope` config), whoever it is. */
export function callerOf(request: FastifyRequest): Caller {
  // A route without a scope has no caller: using one there is a mistake in the route, a 500.
  if (!request.caller) throw new Error(`${request.routeOptions.url} has no authenticated caller`);
  return request.caller;
}

/**
 * The application calling a reseller API route: its tenant is `resellerId`. Only applications
 * hold reseller scopes, so the route's scope check has already refused anyone else.
 */
export function applicationCaller(request: FastifyRequest): ApplicationCaller {
  const caller = callerOf(request);
  if (caller.kind !== 'application') throw insufficientScope(request.routeOptions.config.scope ?? 'service');
  return caller;
}

/** The operator calling an operator route (scope `operator`, which only operators hold). */
export function operatorCaller(request: FastifyRequest): OperatorCaller {
  const caller = callerOf(request);
  if (caller.kind !== 'operator') throw insufficientScope(OPERATOR_SCOPE);
  return caller;
}

/**
 * Every route that names a scope authenticates its caller and checks the scope, before anything
 * else of the route runs. The hook is added to the route itself when it is registered (its scope
 * is known then), so routes without a scope pay nothing. The caller's application decides the
 * envelope unless the request or the route names one.
 */
export const authentication = fp<{ ctx: AppContext }>(
  async (app, { ctx }) => {
    app.decorateRequest('caller', null);
    const authHook =
      (scope: TokenScope, permission: Permission, ownVariant: boolean) => async (request: FastifyRequest) => {
        const caller = await authenticate(ctx, request);
        request.caller = caller;
        // A route with an envelope of its own (the operator API's B) keeps it.
        if (!ownVariant && request.headers['x-envelope-variant'] === undefined) {
          request.variant = caller.state.variant;
        }
        requireScope(caller, scope);
        if (caller.kind === 'operator') requireRole(caller, permission);
      };
    app.addHook('onRoute', (route) => {
      const scope = route.config?.scope;
      if (!scope) return;
      // The one rule for roles: the route's permission, or what its method implies.
      const reads = [route.method].flat().every((m) => m === 'GET' || m === 'HEAD');
      const permission = route.config?.permission ?? (reads ? 'read' : 'manage');
      route.onRequest = [
        ...[route.onRequest ?? []].flat(),
        authHook(scope, permission, route.config?.variant !== undefined),
      ];
    });
  },
  { name: 'vrp-authentication', dependencies: ['vrp-envelope-variant'] },
);
