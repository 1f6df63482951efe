import { Type } from 'typebox';
import type { App } from './app-type.ts';
import { buildOpenApi, type DocumentKind, isOperatorRoute } from './openapi.ts';

/** How a document route presents itself in the document it serves. */
export interface DocumentRouteOptions {
  readonly path: string;
  readonly kind: DocumentKind;
  readonly operationId: string;
  readonly tags: string[];
  readonly description: string;
}

/**
 * `GET path`: one of the server's OpenAPI 3.1 documents (the reseller API's, without the
 * operator routes, or the operator API's), made from the registered routes once, when first
 * asked (every route is registered by then), and sent as it is. No token: it says what the
 * routes are, not what they hold.
 */
export function registerDocumentRoute(app: App, o: DocumentRouteOptions): void {
  let document: string | undefined;
  const wanted =
    o.kind === 'operator'
      ? isOperatorRoute
      : (r: Parameters<typeof isOperatorRoute>[0]) => !isOperatorRoute(r);
  app.get(
    o.path,
    {
      schema: {
        operationId: o.operationId,
        tags: o.tags,
        summary: 'This OpenAPI document',
        description: o.description,
        responses: {
          200: {
            description: 'OpenAPI 3.1',
            content: { 'application/json': { schema: Type.Object({ openapi: Type.String() }) } },
          },
        },
      },
    },
    async (request, reply) => {
      document ??= JSON.stringify(buildOpenApi(request.server.registeredRoutes.filter(wanted), o.kind));
      return reply.type('application/json; charset=utf-8').send(document);
    },
  );
}
