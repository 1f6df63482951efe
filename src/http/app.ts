import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { LOG_REDACT } from '../domain/log-redaction.ts';
import { registerBackupRoutes } from './actions/backups.ts';
import { registerConsoleLinkRoutes } from './actions/console.ts';
import { registerReinstallRoutes } from './actions/reinstall.ts';
import { registerRescueRoutes } from './actions/rescue.ts';
import { registerReverseDnsRoutes } from './actions/reverse-dns.ts';
import { registerScheduleRoutes } from './actions/schedules.ts';
import { registerServiceActionRoutes } from './actions/service-actions.ts';
import type { App } from './app-type.ts';
import { BASE } from './base-path.ts';
import { answerClientError } from './client-error.ts';
import { answerConsoleError, isConsoleTarget, registerConsoleRoutes } from './console/console-routes.ts';
import { createErrorAnswer, toApiError } from './error-handler.ts';
import { redactUrl } from './log-url.ts';
import { namedPlugin } from './named-plugin.ts';
import { registerApplicationRoutes } from './operator/applications.ts';
import { registerOperatorAuditRoutes } from './operator/audit.ts';
import { registerCatalogRoutes } from './operator/catalog.ts';
import { registerOperatorHostRoutes } from './operator/hosts.ts';
import { registerOperatorIpPoolRoutes } from './operator/ip-pools.ts';
import { registerOperatorJobRoutes } from './operator/jobs.ts';
import { registerOperatorNotificationRoutes } from './operator/notifications.ts';
import { registerOperatorDocumentRoute } from './operator/openapi-document.ts';
import { registerOperatorOverviewRoute } from './operator/overview.ts';
import { registerResellerRoutes } from './operator/resellers.ts';
import { registerOperatorServiceRoutes } from './operator/services.ts';
import { registerOperatorUsageRoutes } from './operator/usage.ts';
import { registerWhoamiRoute } from './operator/whoami.ts';
import { auditRefusals } from './plugins/audit.ts';
import { authentication } from './plugins/authenticate.ts';
import { cors } from './plugins/cors.ts';
import { envelopeVariant } from './plugins/envelope-variant.ts';
import { errorAnswers } from './plugins/errors.ts';
import { jsonBody } from './plugins/json-body.ts';
import { httpMetrics } from './plugins/metrics.ts';
import { notFound } from './plugins/not-found.ts';
import { openapiRoutes } from './plugins/openapi-routes.ts';
import { rateLimit } from './plugins/rate-limit.ts';
import { requestId, requestIdOf } from './plugins/request-id.ts';
import { requestLogging } from './plugins/request-log.ts';
import { shutdownGate } from './plugins/shutdown.ts';
import { storableInput } from './plugins/storable-input.ts';
import { registerAccessRoutes } from './routes/access.ts';
import { registerDocsRoutes } from './routes/docs-page.ts';
import { registerEventRoutes } from './routes/events.ts';
import { registerOauthRoutes } from './routes/oauth.ts';
import { registerOrderRoutes } from './routes/orders.ts';
import { registerProbeRoutes } from './routes/probes.ts';
import { registerProductRoutes } from './routes/products.ts';
import { registerServiceRoutes } from './routes/services.ts';
import { registerUsageRoutes } from './routes/usage.ts';
import { registerWebhookRoutes } from './routes/webhooks.ts';
import { sharedSchemaCompilers } from './schema-compilers.ts';
import type { ServiceConsoles } from './service-console/consoles.ts';
import { registerServiceConsoleRoutes } from './service-console/routes.ts';
import { createVariantResolver } from './variant.ts';

export type { App } from './app-type.ts';
export type { ApplicationCaller, Caller, OperatorCaller } from './plugins/authenticate.ts';

const BODY_LIMIT = 1024 * 1024;

export interface BuildAppOptions {
  /** Pino options, or false for no logs (tests). */
  readonly logger?: boolean | Record<string, unknown>;
  /**
   * The hypervisor driver's consoles, for a service's console in the browser (main.ts gives the
   * process's driver); without them the console answers 503 `console_unavailable`.
   */
  readonly consoles?: ServiceConsoles;
}

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

const ROUTES: readonly ((app: App, ctx: AppContext, options: BuildAppOptions) => void)[] = [
  registerProbeRoutes,
  registerOauthRoutes,
  registerAccessRoutes,
  registerProductRoutes,
  registerOrderRoutes,
  registerServiceRoutes,
  registerServiceActionRoutes,
  registerConsoleLinkRoutes,
  registerReinstallRoutes,
  registerRescueRoutes,
  registerBackupRoutes,
  registerScheduleRoutes,
  registerReverseDnsRoutes,
  registerUsageRoutes,
  registerDocsRoutes,
  // The operator API (docs/design/contract.md#operator-api): src/http/operator/.
  registerWhoamiRoute,
  registerEventRoutes,
  registerWebhookRoutes,
  registerResellerRoutes,
  registerOperatorServiceRoutes,
  registerOperatorJobRoutes,
  registerOperatorHostRoutes,
  registerOperatorIpPoolRoutes,
  registerCatalogRoutes,
  registerApplicationRoutes,
  registerOperatorNotificationRoutes,
  registerOperatorUsageRoutes,
  registerOperatorAuditRoutes,
  registerOperatorOverviewRoute,
  registerOperatorDocumentRoute,
  // The operator console (docs/design/contract.md#operator-console): src/http/console/.
  registerConsoleRoutes,
  // A service's console in the browser: the page a one-time link opens, and its WebSockets.
  registerServiceConsoleRoutes,
];

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
    // request.log made when a request first logs, and one access line per request.
    ...(logger && requestLogging),
    // Errors Fastify meets before routing (a path that is not UTF-8, an overlong id) and those
    // Node's parser meets before Fastify get the envelope too.
    // Under the console, they are pages like the console's other errors.
    frameworkErrors: (err, request, reply) =>
      void (isConsoleTarget(request.url)
        ? answerConsoleError(toApiError(err), request, reply.header('x-request-id', request.id))
        : answerError(err, request, reply)),
    clientErrorHandler: answerClientError,
    bodyLimit: BODY_LIMIT,
    genReqId: requestIdOf,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    schemaController: { compilersFactory: sharedSchemaCompilers },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Fastify's own 503 while closing has its own body; the shutdown plugin answers instead.
    return503OnClosing: false,
    // A request's address (request.ip) is the connection's, or the X-Forwarded-For of a proxy
    // VRP_TRUST_PROXY lists: what the audit log and the login throttle see.
    ...(ctx.config.trustProxy.length > 0 && { trustProxy: [...ctx.config.trustProxy] }),
  }).withTypeProvider<TypeBoxTypeProvider>();

  // The app's own plugins, one concern each. fastify-plugin lets their hooks, decorators and
  // handlers reach the whole app; those that add route hooks do it from onRoute, so they must
  // load before any route, and they do: routes are registered last.
  app.register(requestId);
  app.register(shutdownGate(app));
  app.register(httpMetrics, { metrics: ctx.metrics.http });
  app.register(cors, { origins: ctx.config.corsOrigins });
  app.register(openapiRoutes);
  app.register(jsonBody);
  app.register(storableInput);
  app.register(envelopeVariant);
  app.register(authentication, { ctx });
  app.register(auditRefusals, { ctx });
  app.register(rateLimit, { rate: ctx.config.rateLimit, burst: ctx.config.rateBurst });
  app.register(errorAnswers, { answer: answerError });
  app.register(notFound);

  // Each route file in a scope of its own: none depends on another being registered before it.
  for (const registerRoutes of ROUTES) {
    app.register(
      namedPlugin(registerRoutes.name, async (scope: typeof app) => registerRoutes(scope, ctx, options)),
    );
  }
  return app;
}

export { BASE };
