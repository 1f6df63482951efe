import type { RouteOptions } from 'fastify';
import { ERROR_CODES } from '../domain/errors.ts';
import type { Variant } from './envelope.ts';
import { API_VERSION } from './routes/access.ts';
import { VARIANT_KEYWORD } from './schemas.ts';

/** A route as registered: what the OpenAPI document is made from. */
export interface RegisteredRoute {
  readonly method: string;
  readonly url: string;
  readonly schema: RouteOptions['schema'];
  readonly scope: string | undefined;
}

type Schema = Record<string, unknown>;

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

/** The payload a route answers in `variant`: its 200 schema, or that schema's branch for the variant. */
function payloadOf(schema: Schema, variant: Variant): Schema {
  const branches = schema['anyOf'] as Schema[] | undefined;
  const own = branches?.find((b) => b[VARIANT_KEYWORD] === variant);
  if (!own) return schema;
  const { [VARIANT_KEYWORD]: _, ...payload } = own;
  return payload;
}

/** The envelope of `variant` around `data` (CONTRACT.md section 2); errors add `error_code`. */
function envelope(variant: Variant, success: boolean, data: Schema, extra: Schema = {}): Schema {
  const [flag, value] =
    variant === 'A' ? ['success', String(success)] : ['status', success ? 'Success' : 'Error'];
  return {
    title: `Variant ${variant}${success ? '' : ' error'}`,
    type: 'object',
    required: [flag, 'message', 'data', ...Object.keys(extra)],
    properties: { [flag]: { const: value }, message: { type: 'string' }, data, ...extra },
  };
}

/** Variant B carries the payload, variant A its JSON text. */
function successEnvelopes(payload: Schema): Schema {
  const text = {
    type: 'string',
    description: 'The JSON text of the payload',
    contentMediaType: 'application/json',
    contentSchema: payloadOf(payload, 'A'),
  };
  return { oneOf: [envelope('B', true, payloadOf(payload, 'B')), envelope('A', true, text)] };
}

const errorCode = { error_code: { type: 'string', enum: Object.keys(ERROR_CODES) } };
const ERROR_ENVELOPES: Record<string, Schema> = {
  ErrorB: envelope('B', false, { type: 'array', maxItems: 0 }, errorCode),
  ErrorA: envelope('A', false, { const: '[]' }, errorCode),
};

/** Errors of API routes: one error handler answers them all, so they are declared here once. */
function errorAnswer(description: string) {
  const schema = {
    oneOf: [{ $ref: '#/components/schemas/ErrorB' }, { $ref: '#/components/schemas/ErrorA' }],
  };
  return { description, content: { 'application/json': { schema } } };
}

function apiResponses(response: Schema): Schema {
  return {
    '200': {
      description:
        'Success, in the envelope of the request (X-Envelope-Variant, else the application default)',
      content: { 'application/json': { schema: successEnvelopes(response['200'] as Schema) } },
    },
    '401': errorAnswer('invalid_token'),
    '403': errorAnswer('insufficient_scope'),
    '4XX': errorAnswer('Refused; error_code says why (docs/api.md, Error codes)'),
    '5XX': errorAnswer('internal_error, store_unavailable or shutting_down'),
  };
}

/** Routes outside the envelopes (token endpoint, metadata, probes) answer their schemas as they are. */
function plainResponses(response: Schema | undefined): Schema {
  if (!response) return { '200': { description: 'Success' } };
  const out: Schema = {};
  for (const [status, schema] of Object.entries(response)) {
    out[status.toUpperCase()] = {
      description: status.startsWith('2') ? 'Success' : 'Error',
      content: { 'application/json': { schema } },
    };
  }
  return out;
}

/** OpenAPI 3.1 from the route schemas: the same TypeBox schemas that validate requests and serialize answers. */
export function buildOpenApi(routes: readonly RegisteredRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const sorted = [...routes]
    .filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS')
    .sort((a, b) => a.url.localeCompare(b.url) || a.method.localeCompare(b.method));
  for (const r of sorted) {
    const schema = (r.schema ?? {}) as Record<string, Schema | undefined>;
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
      responses: r.scope ? apiResponses(schema['response'] ?? {}) : plainResponses(schema['response']),
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
      schemas: ERROR_ENVELOPES,
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
