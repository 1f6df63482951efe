import type { RouteOptions } from 'fastify';
import { API_VERSION } from './routes/access.ts';

/** A route as registered: what the OpenAPI document is made from. */
export interface RegisteredRoute {
  readonly method: string;
  readonly url: string;
  readonly schema: RouteOptions['schema'];
  readonly scope: string | undefined;
}

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

const ENVELOPE_B = {
  type: 'object',
  required: ['status', 'message', 'data'],
  properties: {
    status: { type: 'string', enum: ['Success', 'Error'] },
    message: { type: 'string' },
    data: {},
    error_code: { type: 'string' },
  },
};
const ENVELOPE_A = {
  type: 'object',
  required: ['success', 'message', 'data'],
  properties: {
    success: { type: 'string', enum: ['true', 'false'] },
    message: { type: 'string' },
    data: { type: 'string', description: 'JSON text of the payload' },
    error_code: { type: 'string' },
  },
};

/** OpenAPI 3.1 from the route schemas: the same TypeBox schemas that validate requests. */
export function buildOpenApi(routes: readonly RegisteredRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const sorted = [...routes]
    .filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS')
    .sort((a, b) => a.url.localeCompare(b.url) || a.method.localeCompare(b.method));
  for (const r of sorted) {
    const schema = (r.schema ?? {}) as Record<string, Record<string, unknown> | undefined>;
    const parameters: unknown[] = [];
    for (const [where, part] of [
      ['path', schema['params']],
      ['query', schema['querystring']],
    ] as const) {
      const props = (part?.['properties'] ?? {}) as Record<string, unknown>;
      const required = (part?.['required'] ?? []) as string[];
      for (const [name, s] of Object.entries(props)) {
        parameters.push({
          name,
          in: where,
          required: where === 'path' || required.includes(name),
          schema: s,
        });
      }
    }
    const op: Record<string, unknown> = {
      operationId: `${r.method.toLowerCase()} ${r.url}`,
      parameters,
      responses: {
        '200': {
          description: 'Success (variant B; variant A with X-Envelope-Variant: A)',
          content: { 'application/json': { schema: { oneOf: [ENVELOPE_B, ENVELOPE_A] } } },
        },
        '400': { description: 'Validation or state error (error_code)' },
        ...(r.scope
          ? { '401': { description: 'invalid_token' }, '403': { description: 'insufficient_scope' } }
          : {}),
      },
    };
    if (r.scope) op['security'] = [{ oauth2: [r.scope] }];
    if (schema['body'])
      op['requestBody'] = { required: false, content: { 'application/json': { schema: schema['body'] } } };
    const path = toOpenApiPath(r.url);
    paths[path] ??= {};
    paths[path][r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Virtual Server Reseller Provisioning API', version: API_VERSION },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: {
        oauth2: {
          type: 'oauth2',
          flows: {
            clientCredentials: {
              tokenUrl: '/vps_reseller_provider/public/oauth/token',
              scopes: { access: 'access control', products: 'products control', service: 'service control' },
            },
          },
        },
      },
    },
    paths,
  };
}
