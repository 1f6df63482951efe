import type { AppContext } from '../../context.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { registerDocumentRoute } from '../document-route.ts';

/** `GET OPS/openapi.json`: the operator API's OpenAPI 3.1 document (docs/openapi-operator.json). */
export function registerOperatorDocumentRoute(app: App, _ctx: AppContext): void {
  registerDocumentRoute(app, {
    path: `${OPS}/openapi.json`,
    kind: 'operator',
    operationId: 'operatorOpenapiDocument',
    tags: ['Operator'],
    description:
      'The OpenAPI 3.1 document of the operator API, made from its routes (docs/openapi-operator.json).',
  });
}
