import fastifyFormbody from '@fastify/formbody';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { createTokenEndpoint } from '../../auth/token-endpoint.ts';
import type { AppContext } from '../../context.ts';
import { SCOPES } from '../../domain/scopes.ts';
import type { App } from '../app-type.ts';
import { BASE } from '../base-path.ts';
import { baseUrl } from '../base-url.ts';
import { isFields } from '../fields.ts';
import { HTTPS_REQUIRED, plainHttpRefused } from '../https-only.ts';
import { namedPlugin } from '../named-plugin.ts';
import { StringEnum } from '../schemas/common.ts';

/** RFC 6749 section 4.4.2, as a form or as JSON; the endpoint reads it itself (token-endpoint.ts). */
const TokenRequest = Type.Object(
  {
    grant_type: Type.Literal('client_credentials'),
    client_id: Type.Optional(
      Type.String({
        description: 'With `client_secret_post`; with HTTP Basic, leave it out or send the same',
      }),
    ),
    client_secret: Type.Optional(
      Type.String({ description: 'With `client_secret_post`; never with HTTP Basic' }),
    ),
    scope: Type.Optional(
      Type.String({
        description: 'A space-separated subset of the application’s scopes; all of them without it',
        examples: ['access products service'],
      }),
    ),
  },
  { title: 'TokenRequest' },
);

const NO_STORE_HEADERS = {
  'Cache-Control': { description: '`no-store`', schema: { type: 'string' } },
  Pragma: { description: '`no-cache`', schema: { type: 'string' } },
};

/** RFC 6749 section 5.1. */
const TokenAnswer = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Seconds the token is valid for' }),
    scope: Type.String({ description: 'The scopes granted, space-separated' }),
  },
  { title: 'TokenResponse' },
);

/**
 * RFC 6749 section 5.2: an error of the token endpoint with the codes it answers with `status`,
 * 5xx included (`server_error`).
 */
function oauthError(description: string, codes: readonly string[], headers: Record<string, unknown> = {}) {
  const schema = Type.Object({ error: StringEnum(codes), error_description: Type.String() });
  return {
    description,
    headers: { ...NO_STORE_HEADERS, ...headers },
    content: { 'application/json': { schema } },
  };
}

/** RFC 8414 section 2. */
const ServerMetadata = Type.Object(
  {
    issuer: Type.String({ description: '{base_url}: this server’s public URL and BASE' }),
    token_endpoint: Type.String(),
    grant_types_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
  },
  { title: 'AuthorizationServerMetadata' },
);

const TOKEN_DOCS = {
  operationId: 'token',
  tags: ['OAuth'],
  summary: 'Get an access token',
  description:
    'OAuth 2.0 client credentials (RFC 6749 section 4.4). The application authenticates with HTTP Basic (`client_secret_basic`: `Authorization: Basic base64(client_id:client_secret)`) or with `client_id` and `client_secret` in the body (`client_secret_post`). Answers and errors are RFC 6749 bodies, not the envelope. Failed authentications are counted per address, each before its secret is checked; too many lock the address out for a while (429 `temporarily_unavailable`). Secret checks run a few at a time: too many waiting from one address get 429, in all 503 `temporarily_unavailable`, both with Retry-After.',
  requestBody: {
    required: true,
    content: {
      'application/x-www-form-urlencoded': { schema: TokenRequest },
      'application/json': { schema: TokenRequest },
    },
  },
  response: {
    200: {
      description: 'A bearer token (RFC 6749 section 5.1)',
      headers: NO_STORE_HEADERS,
      content: { 'application/json': { schema: TokenAnswer } },
    },
    400: oauthError(
      'A malformed request, another grant type, a scope the application does not have, or (`invalid_request`) plain http from outside loopback, which the server refuses unless VRP_ALLOW_HTTP=1',
      ['invalid_request', 'unsupported_grant_type', 'invalid_scope'],
    ),
    401: oauthError('The application did not authenticate, or is disabled', ['invalid_client'], {
      'WWW-Authenticate': {
        description: 'A Basic challenge, when the request tried HTTP Basic',
        schema: { type: 'string' },
      },
    }),
    413: oauthError('The body is larger than 1 MiB', ['invalid_request']),
    415: oauthError('The body is neither a form nor JSON', ['invalid_request']),
    429: oauthError(
      'Too many failed authentications from this address, or too many waiting at once from it',
      ['temporarily_unavailable'],
      {
        'Retry-After': {
          description: 'Seconds until the address may try again',
          schema: { type: 'integer' },
        },
      },
    ),
    500: oauthError('An unexpected failure', ['server_error']),
    503: oauthError(
      'The store is unreachable, or this process is shutting down (`server_error`), or too many authentications are waiting for their secret check (`temporarily_unavailable`, with Retry-After)',
      ['server_error', 'temporarily_unavailable'],
      {
        'Retry-After': {
          description: 'Seconds to wait, with `temporarily_unavailable`',
          schema: { type: 'integer' },
        },
      },
    ),
  },
};

export function registerOauthRoutes(app: App, ctx: AppContext): void {
  const endpoint = createTokenEndpoint(ctx);

  // RFC 6749 sends a form; its parser (@fastify/formbody: a repeated field becomes a list, which
  // the endpoint refuses) lives in this scope only, the rest of the API reads JSON.
  app.register(
    namedPlugin('oauthTokenEndpoint', async (scope: App) => {
      await scope.register(fastifyFormbody);
      // Any reply: the endpoint decides the status of each RFC 6749 answer (token-endpoint.ts).
      scope.post(
        `${BASE}/oauth/token`,
        { config: { oauth: true }, schema: TOKEN_DOCS },
        async (request, reply: FastifyReply) => {
          // A client secret must not cross a network in clear: refused before it is read.
          if (plainHttpRefused(request, ctx.config.allowHttp)) {
            return reply
              .code(400)
              .headers({ 'cache-control': 'no-store', pragma: 'no-cache' })
              .send({ error: 'invalid_request', error_description: HTTPS_REQUIRED });
          }
          const body = isFields(request.body) ? request.body : {};
          const result = await endpoint.handle({
            authorization: request.headers.authorization,
            body,
            ip: request.ip,
          });
          return reply.code(result.status).headers(result.headers).send(result.body);
        },
      );
    }),
  );

  // RFC 8414 section 3: the metadata of issuer https://host/path lives at /.well-known/oauth-authorization-server/path.
  const metadata = {
    schema: {
      operationId: 'authorizationServerMetadata',
      tags: ['OAuth'],
      summary: 'The authorization server metadata (RFC 8414)',
      description:
        'Where RFC 8414 puts it for the issuer {base_url}, so that OAuth client libraries find the token endpoint by themselves.',
      response: {
        200: {
          description: 'RFC 8414 metadata',
          headers: { 'Cache-Control': { description: '`public, max-age=3600`', schema: { type: 'string' } } },
          content: { 'application/json': { schema: ServerMetadata } },
        },
      },
    },
  };
  app.get(`/.well-known/oauth-authorization-server${BASE}`, metadata, async (request, reply) => {
    const issuer = baseUrl(ctx, request);
    reply.header('cache-control', 'public, max-age=3600');
    return {
      issuer,
      token_endpoint: `${issuer}/oauth/token`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: [...SCOPES],
      // No response_types_supported: response types belong to the authorization endpoint,
      // which a client-credentials-only server does not have ("token" would announce the
      // implicit grant).
    };
  });
}
