import fp from 'fastify-plugin';
import type { RegisteredRoute } from '../openapi.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, for the OpenAPI document. */
    registeredRoutes: RegisteredRoute[];
  }
}

/** Keeps every route as it is registered, with its schema and scope, for the OpenAPI document. */
export const openapiRoutes = fp(
  (app, _options, done) => {
    const registered: RegisteredRoute[] = [];
    app.decorate('registeredRoutes', registered);
    app.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) {
        registered.push({ method, url: route.url, schema: route.schema, scope: route.config?.scope });
      }
    });
    done();
  },
  { name: 'vrp-openapi-routes' },
);
