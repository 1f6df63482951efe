import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { SCOPES } from '../../auth/scopes.ts';
import { createTokenEndpoint } from '../../auth/token-endpoint.ts';
import type { AppContext } from '../../context.ts';
import type { App } from '../app.ts';
import { BASE } from '../base-path.ts';
import { registerFormParser } from '../body-parsers.ts';

/** {base_url}: the configured public URL, or the one this request reached us at. */
export function baseUrl(ctx: AppContext, request: FastifyRequest): string {
  if (ctx.config.baseUrl) return ctx.config.baseUrl;
  return `${request.protocol}://${request.host}${BASE}`;
}

/** RFC 6749 section 5.1. */
const TokenAnswer = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  scope: Type.String(),
});
/** RFC 6749 section 5.2: every error of the token endpoint, 5xx included. */
const OauthError = Type.Object({ error: Type.String(), error_description: Type.String() });

/** RFC 8414 section 2. */
const ServerMetadata = Type.Object({
  issuer: Type.String(),
  token_endpoint: Type.String(),
  grant_types_supported: Type.Array(Type.String()),
  token_endpoint_auth_methods_supported: Type.Array(Type.String()),
  scopes_supported: Type.Array(Type.String()),
  response_types_supported: Type.Array(Type.String()),
});

export function registerOauthRoutes(app: App, ctx: AppContext): void {
  const endpoint = createTokenEndpoint(ctx);

  // RFC 6749 sends a form; its parser lives in this scope only, the rest of the API reads JSON.
  app.register(async (scope) => {
    registerFormParser(scope);
    const schema = { response: { 200: TokenAnswer, '4xx': OauthError, '5xx': OauthError } };
    scope.post(`${BASE}/oauth/token`, { config: { oauth: true }, schema }, async (request, reply) => {
      const body = (request.body && typeof request.body === 'object' ? request.body : {}) as Record<
        string,
        unknown
      >;
      const result = await endpoint.handle({
        authorization: request.headers.authorization,
        body,
        ip: request.ip,
      });
      return reply.code(result.status).headers(result.headers).send(result.body);
    });
  });

  // RFC 8414 section 3: the metadata of issuer https://host/path lives at /.well-known/oauth-authorization-server/path.
  const metadata = { schema: { response: { 200: ServerMetadata } } };
  app.get(`/.well-known/oauth-authorization-server${BASE}`, metadata, async (request, reply) => {
    const issuer = baseUrl(ctx, request);
    reply.header('cache-control', 'public, max-age=3600');
    return {
      issuer,
      token_endpoint: `${issuer}/oauth/token`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: [...SCOPES],
      response_types_supported: ['token'],
    };
  });
}
