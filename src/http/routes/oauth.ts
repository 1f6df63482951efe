import type { FastifyRequest } from 'fastify';
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

export function registerOauthRoutes(app: App, ctx: AppContext): void {
  const endpoint = createTokenEndpoint(ctx);

  // RFC 6749 sends a form; its parser lives in this scope only, the rest of the API reads JSON.
  app.register(async (scope) => {
    registerFormParser(scope);
    scope.post(`${BASE}/oauth/token`, { config: { oauth: true } }, async (request, reply) => {
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
  app.get(`/.well-known/oauth-authorization-server${BASE}`, async (request, reply) => {
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
