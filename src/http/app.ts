import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { ClientState } from '../auth/client-state.ts';
import type { Scope } from '../auth/scopes.ts';
import type { AppContext } from '../context.ts';
import { ApiError } from '../domain/errors.ts';
import { authenticate, requireScope } from './authenticate.ts';
import { BASE } from './base-path.ts';
import { registerJsonOnly } from './body-parsers.ts';
import { answerClientError } from './client-error.ts';
import { isVariant, type Variant } from './envelope.ts';
import { createErrorAnswer } from './error-handler.ts';
import { redactUrl } from './log-url.ts';
import type { RegisteredRoute } from './openapi.ts';
import { createRateLimiter } from './rate-limit.ts';
import { registerAccessRoutes } from './routes/access.ts';
import { registerBackupRoutes } from './routes/backups.ts';
import { registerOauthRoutes } from './routes/oauth.ts';
import { registerOrderRoutes } from './routes/orders.ts';
import { registerProbeRoutes } from './routes/probes.ts';
import { registerProductRoutes } from './routes/products.ts';
import { registerScheduleRoutes } from './routes/schedules.ts';
import { registerServiceActionRoutes } from './routes/service-actions.ts';
import { registerServiceRoutes } from './routes/services.ts';
import { assertStorableInput } from './storable-input.ts';
import { createVariantResolver } from './variant.ts';

export const BODY_LIMIT = 1024 * 1024;

/** The authenticated caller of an API request. */
export interface Caller {
  readonly clientId: string;
  readonly resellerId: string;
  readonly scopes: readonly Scope[];
  readonly state: ClientState;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The envelope this request is answered in. */
    variant: Variant;
    /** Set by the auth hook on API routes. */
    caller: Caller | null;
  }
  interface FastifyInstance {
    /** Every route registered, for the OpenAPI document. */
    registeredRoutes: RegisteredRoute[];
  }
  interface FastifyContextConfig {
    /** The scope an API route needs; routes without it are not enveloped API routes. */
    scope?: Scope;
    /** Errors of this route are RFC 6749 error bodies, not envelopes. */
    oauth?: boolean;
  }
}

export type App = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  import('fastify').FastifyBaseLogger,
  TypeBoxTypeProvider
>;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface BuildAppOptions {
  /** Pino options, or false for no logs (tests). */
  readonly logger?: boolean | Record<string, unknown>;
}

/** Secrets never reach the logs, whatever a handler logs. */
export const LOG_REDACT = {
  paths: [
    'req.headers.authorization',
    'headers.authorization',
    '*.password',
    '*.client_secret',
    '*.access_token',
    '*.secret',
    'password',
    'client_secret',
    'access_token',
  ],
  censor: '[redacted]',
};

/** Fastify's request serializer, with secret query parameters taken out of the URL. */
const LOG_SERIALIZERS = {
  req: (request: FastifyRequest) => ({
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }),
};

/** Builds the Fastify app; never listens (main.ts does). */
export function buildApp(ctx: AppContext, options: BuildAppOptions = {}): App {
  const logger =
    options.logger === false
      ? false
      : {
          level: ctx.config.logLevel,
          redact: LOG_REDACT,
          serializers: LOG_SERIALIZERS,
          ...(typeof options.logger === 'object' ? options.logger : {}),
        };
  const answerError = createErrorAnswer(createVariantResolver(ctx));
  const app = Fastify({
    logger,
    // Errors Fastify meets before routing (a path that is not UTF-8, an overlong id) and those
    // Node's parser meets before Fastify get the envelope too.
    frameworkErrors: (err, request, reply) => void answerError(err, request, reply),
    clientErrorHandler: answerClientError,
    bodyLimit: BODY_LIMIT,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Fastify's own 503 while closing has its own body; the onRequest hook below answers instead.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorateRequest('variant', 'B');
  app.decorateRequest('caller', null);

  registerJsonOnly(app);

  const limiter = createRateLimiter(ctx.config.rateLimit, ctx.config.rateBurst);
  const routes: { pattern: RegExp; method: string }[] = [];
  const registered: RegisteredRoute[] = [];
  app.decorate('registeredRoutes', registered);
  /** Authentication of an API route: its scope is known when the route is registered. */
  const authHook = (scope: Scope) => async (request: FastifyRequest) => {
    const caller = await authenticate(ctx, request);
    request.caller = caller;
    if (request.headers['x-envelope-variant'] === undefined) request.variant = caller.state.variant;
    requireScope(caller, scope);
    const wait = limiter.take(caller.clientId, Date.now());
    if (wait > 0) {
      throw new ApiError('rate_limited', 'Too many requests; slow down', {
        headers: { 'retry-after': String(Math.ceil(wait / 1000)) },
      });
    }
  };
  app.addHook('onRoute', (route) => {
    const pattern = new RegExp(`^${route.url.replace(/:[A-Za-z_]+/g, '[^/]+').replace(/\/$/, '')}/?$`);
    for (const m of [route.method].flat()) {
      routes.push({ pattern, method: m });
      registered.push({ method: m, url: route.url, schema: route.schema, scope: route.config?.scope });
    }
    // Route-level hooks, built once here rather than looking the route up on every request.
    const scope = route.config?.scope;
    if (scope) route.onRequest = [...[route.onRequest ?? []].flat(), authHook(scope)];
  });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (closing) {
      throw new ApiError('shutting_down', 'The server is shutting down; send the request again', {
        headers: { connection: 'close', 'retry-after': '1' },
      });
    }
    const header = request.headers['x-envelope-variant'];
    if (header === undefined) return;
    if (!isVariant(header))
      throw new ApiError('invalid_envelope_variant', 'X-Envelope-Variant must be A or B');
    request.variant = header;
  });

  // A request without a body is validated as an empty object.
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined || request.body === null) request.body = {};
    assertStorableInput(request);
  });

  app.setErrorHandler(answerError);

  app.setNotFoundHandler(async (request: FastifyRequest) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))].filter(
      (m) => m !== 'HEAD',
    );
    if (allowed.length > 0) {
      throw new ApiError(
        'method_not_allowed',
        `Method ${request.method} is not allowed here; use ${allowed.join(' or ')}`,
        { headers: { allow: allowed.join(', ') } },
      );
    }
    throw new ApiError('not_found', `No route ${request.method} ${path}`);
  });

  registerProbeRoutes(app, ctx);
  registerOauthRoutes(app, ctx);
  registerAccessRoutes(app, ctx);
  registerProductRoutes(app, ctx);
  registerOrderRoutes(app, ctx);
  registerServiceRoutes(app, ctx);
  registerServiceActionRoutes(app, ctx);
  registerBackupRoutes(app, ctx);
  registerScheduleRoutes(app, ctx);
  return app;
}

export { BASE };
