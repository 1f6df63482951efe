import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import type { App } from '../app.ts';
import { OPS } from '../base-path.ts';
import { buildOpenApi, isOperatorRoute } from '../openapi.ts';

/**
 * `GET OPS/openapi.json`: the operator API's OpenAPI 3.1 document (docs/openapi-operator.json),
 * made from its routes, without a token (it says what the routes are, not what they hold).
 */
export function registerOperatorDocumentRoute(app: App, _ctx: AppContext): void {
  let document: string | undefined;
  app.get(
    `${OPS}/openapi.json`,
    {
      schema: {
        operationId: 'operatorOpenapiDocument',
        tags: ['Operator'],
        summary: 'This OpenAPI document',
        description:
          'The OpenAPI 3.1 document of the operator API, made from its routes (docs/openapi-operator.json).',
        responses: {
          200: {
            description: 'OpenAPI 3.1',
            content: { 'application/json': { schema: Type.Object({ openapi: Type.String() }) } },
          },
        },
      },
    },
    async (request, reply) => {
      document ??= JSON.stringify(
        buildOpenApi(request.server.registeredRoutes.filter(isOperatorRoute), 'operator'),
      );
      return reply.type('application/json; charset=utf-8').send(document);
    },
  );
}
