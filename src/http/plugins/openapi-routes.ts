import fp from 'fastify-plugin';
import { CONSOLE, SERVICE_CONSOLE } from '../base-path.ts';
import { forValidation, type RegisteredRoute, type RouteDocs } from '../openapi.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, for the OpenAPI document. */
    registeredRoutes: RegisteredRoute[];
  }
  /** A route's own part of the OpenAPI document (src/http/openapi.ts). */
  interface FastifySchema extends RouteDocs {}
}

const REQUEST_PARTS = ['body', 'params', 'querystring', 'headers'] as const;

/**
 * Keeps every route as it is registered, with its schema and scope, for the OpenAPI document;
 * then takes the document-only keywords out of its request schemas, before Fastify compiles
 * them. Loaded before any route, so it sees them all.
 */
export const openapiRoutes = fp(
  (app, _options, done) => {
    const registered: RegisteredRoute[] = [];
    app.decorate('registeredRoutes', registered);
    app.addHook('onRoute', (route) => {
      // The consoles' pages (the operator's, a service's in the browser) are a web site, not part of the API the document describes.
      if (route.url.startsWith(CONSOLE) || route.url.startsWith(SERVICE_CONSOLE)) return;
      const schema = route.schema;
      for (const method of [route.method].flat()) {
        registered.push({
          method,
          url: route.url,
          schema,
          scope: route.config?.scope,
          oauth: route.config?.oauth === true,
          variant: route.config?.variant,
        });
      }
      if (!schema) return;
      const validated = { ...schema };
      for (const part of REQUEST_PARTS) {
        if (schema[part] !== undefined) validated[part] = forValidation(schema[part]);
      }
      route.schema = validated;
    });
    done();
  },
  { name: 'vrp-openapi-routes' },
);
