import { isDeepStrictEqual } from 'node:util';
import type { FastifySchema } from 'fastify';
import { byCodeUnits } from '../domain/code-unit-text.ts';
import { ERROR_CODES } from '../domain/errors.ts';
import { OPERATOR_SCOPE, SCOPES } from '../domain/scopes.ts';
import { BASE, OPS } from './base-path.ts';
import type { Variant } from './envelope.ts';
import { API_VERSION } from './routes/access.ts';
import { DOCUMENT_ONLY, VARIANT_KEYWORD } from './schemas/common.ts';

/**
 * What a route's schema may say for the document besides what Fastify reads (Fastify ignores
 * these fields; the names are those of OpenAPI and of @fastify/swagger).
 */
export interface RouteDocs {
  /** camelCase, unique: the method name a generated client gives the operation. */
  readonly operationId?: string;
  readonly summary?: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  /**
   * An OpenAPI Request Body Object, for the document only: for a route that reads its body
   * itself (the token endpoint takes a form or JSON and answers RFC 6749 errors, not 400s).
   */
  readonly requestBody?: Schema;
  /**
   * Answers for the document only, as `response` entries are written: for answers a route sends
   * without a response schema, because Fastify would serialize every answer of that status with
   * it, the error envelope included.
   */
  readonly responses?: Readonly<Record<string, Schema>>;
  /** Headers of an API route's success answer (OpenAPI Header Objects by name). */
  readonly successHeaders?: Readonly<Record<string, Schema>>;
  /**
   * Media types an API route also answers with, besides its enveloped JSON (by name, with their
   * schemas): the operator's usage report as CSV.
   */
  readonly successMedia?: Readonly<Record<string, Schema>>;
  /** Error statuses an API route answers besides the usual ones (409 for a conflict). */
  readonly errorStatuses?: readonly number[];
}

/** A route as registered: what the OpenAPI document is made from. */
export interface RegisteredRoute {
  readonly method: string;
  readonly url: string;
  /** As the route gave it: with the document-only keywords (schemas.ts, DOCUMENT_ONLY). */
  readonly schema: (FastifySchema & RouteDocs) | undefined;
  /** The scope of an API route: it answers in the envelopes and needs a bearer token. */
  readonly scope: string | undefined;
  /** Errors are RFC 6749 bodies, which the route declares itself. */
  readonly oauth: boolean;
  /** The one envelope an API route answers in whatever the request asks (the operator API's B). */
  readonly variant?: Variant | undefined;
}

type Schema = Record<string, unknown>;

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `v` if it is an object (a schema, a map of them), else an empty one: a part a route left out. */
const objectOr = (v: unknown): Schema => (isObject(v) ? v : {});

/** The strings of `v` if it is a list (a schema's `required`). */
const stringsOf = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];

/** A request schema as the document shows it: its document-only keywords merged in. */
function documented(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(documented);
  if (!isObject(schema)) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === DOCUMENT_ONLY) Object.assign(out, value);
    else out[key] = documented(value);
  }
  return out;
}

/** A request schema as Fastify validates it: without its document-only keywords. */
export function forValidation(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forValidation);
  if (!isObject(schema)) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key !== DOCUMENT_ONLY) out[key] = forValidation(value);
  }
  return out;
}

/**
 * Named schemas: every response schema with a `title` becomes `#/components/schemas/<title>`
 * (generated clients give it that type name), the same title always for the same schema. A
 * nullable one (`type: [..., 'null']`) refers to its non-null form.
 */
class NamedSchemas {
  readonly schemas: Record<string, Schema> = {};

  /** `schema` with every titled subschema replaced by a reference. */
  hoist(schema: unknown): unknown {
    if (Array.isArray(schema)) return schema.map((s) => this.hoist(s));
    if (!isObject(schema)) return schema;
    const body: Schema = {};
    for (const [key, value] of Object.entries(schema)) body[key] = this.hoist(value);
    const title = body['title'];
    if (typeof title !== 'string' || !/^[A-Z][A-Za-z0-9]*$/.test(title)) return body;
    const type = body['type'];
    if (Array.isArray(type) && type.includes('null')) {
      // Where it may be null says what it is there; the named schema is the same everywhere.
      const { description, ...rest } = body;
      const types = type.filter((t) => t !== 'null');
      const nonNull = { ...rest, type: types.length === 1 ? types[0] : types };
      return { anyOf: [this.name(title, nonNull), { type: 'null' }], description };
    }
    return this.name(title, body);
  }

  private name(title: string, schema: Schema) {
    const known = this.schemas[title];
    if (known && !isDeepStrictEqual(known, schema)) {
      throw new Error(`two different response schemas are titled ${title}`);
    }
    this.schemas[title] = schema;
    return ref('schemas', title);
  }
}

/** The payload a route answers in `variant`: its 200 schema, or that schema's branch for the variant. */
function payloadOf(schema: Schema, variant: Variant): Schema {
  const branches = Array.isArray(schema['anyOf']) ? schema['anyOf'].filter(isObject) : [];
  const own = branches.find((b) => b[VARIANT_KEYWORD] === variant);
  if (!own) return schema;
  const { [VARIANT_KEYWORD]: _, ...payload } = own;
  return payload;
}

/**
 * The envelope of `variant` around `data` (docs/design/contract.md#envelopes); errors add
 * `error_code`.
 */
function envelope(variant: Variant, success: boolean, data: unknown, extra: Schema = {}): Schema {
  const [flag, value] =
    variant === 'A' ? ['success', String(success)] : ['status', success ? 'Success' : 'Error'];
  return {
    title: `Variant ${variant}${success ? '' : ' error'}`,
    type: 'object',
    required: [flag, 'message', 'data', ...Object.keys(extra)],
    properties: {
      [flag]: { const: value },
      message: {
        type: 'string',
        description: success
          ? 'Empty, or says why nothing was done (the target status was reached already)'
          : 'What went wrong, for a person',
      },
      data,
      ...extra,
    },
    additionalProperties: false,
  };
}

/**
 * Variant B carries the payload, variant A its JSON text (docs/design/contract.md#envelopes); a
 * route with an envelope of its own answers in that one only.
 */
function successEnvelopes(payload: Schema, names: NamedSchemas, only?: Variant): Schema {
  if (only === 'B') return envelope('B', true, names.hoist(payloadOf(payload, 'B')));
  const text = {
    type: 'string',
    description: 'The JSON text of the payload: what variant B sends as `data`',
    contentMediaType: 'application/json',
    contentSchema: names.hoist(payloadOf(payload, 'A')),
  };
  return { oneOf: [envelope('B', true, names.hoist(payloadOf(payload, 'B'))), envelope('A', true, text)] };
}

const ERROR_TEXT: Record<number, string> = {
  400: 'The request is refused as it is',
  401: 'No valid bearer token (RFC 6750): no token, a malformed, expired or revoked one',
  403: 'The token lacks the scope this operation needs',
  404: 'Nothing here has this id for this reseller (another reseller’s objects look the same)',
  409: 'The request conflicts with the current state of what it names',
  413: 'The body is larger than 1 MiB',
  415: 'The body is not application/json',
  429: 'Too many requests from this application; wait as long as Retry-After says',
  500: 'An unexpected failure; the message names the request id to quote',
  502: 'A server the operation writes to (the DNS server) failed or did not answer; nothing was changed',
  503: 'The store is unreachable, or this process is shutting down; retry after Retry-After',
};

/** Headers of error answers, besides X-Request-Id. */
const ERROR_HEADERS: Record<number, string[]> = {
  401: ['WWW-Authenticate'],
  403: ['WWW-Authenticate'],
  429: ['Retry-After'],
  503: ['Retry-After'],
};

const codesOf = (status: number) =>
  Object.entries(ERROR_CODES)
    .filter(([, s]) => s === status)
    .map(([code]) => code);

/** `#/components/responses/Error<status>`: the error envelopes with the codes of that status. */
function errorResponse(status: number): Schema {
  const codes = codesOf(status);
  return {
    description: `${ERROR_TEXT[status] ?? 'Refused'}: ${codes.map((c) => `\`${c}\``).join(', ')}`,
    headers: {
      'X-Request-Id': ref('headers', 'RequestId'),
      ...Object.fromEntries((ERROR_HEADERS[status] ?? []).map((h) => [h, ref('headers', h)])),
    },
    content: {
      'application/json': {
        schema: {
          allOf: [ref('schemas', 'ErrorEnvelope')],
          properties: { error_code: { enum: codes } },
        },
      },
    },
  };
}

const OK_HEADERS = { 'X-Request-Id': ref('headers', 'RequestId') };

/** The answers of an API route: its payload in the envelope of the request's variant, and the error envelopes. */
function apiResponses(route: RegisteredRoute, names: NamedSchemas): Schema {
  const schema = route.schema ?? {};
  const response = objectOr(schema.response);
  const statuses = [400, 401, 403, 404, 429, 500, 503, ...(schema.errorStatuses ?? [])];
  // Every route that may be sent a body reads it, with or without a schema for it: a body over
  // the limit is 413, one that is not JSON 415.
  if (schema.body || (route.method !== 'GET' && route.method !== 'HEAD')) statuses.push(413, 415);
  const media = schema.successMedia ?? {};
  const out: Schema = {
    '200': {
      description: route.variant
        ? `Success, in the variant ${route.variant} envelope`
        : 'Success, in the envelope of the request: X-Envelope-Variant, else the default of the application',
      headers: { ...OK_HEADERS, ...schema.successHeaders },
      content: {
        'application/json': { schema: successEnvelopes(objectOr(response['200']), names, route.variant) },
        ...Object.fromEntries(Object.entries(media).map(([type, m]) => [type, { schema: names.hoist(m) }])),
      },
    },
  };
  for (const status of statuses.sort((a, b) => a - b))
    out[String(status)] = ref('responses', `Error${status}`);
  return out;
}

const SCHEMA_KEYWORDS = ['type', 'anyOf', 'oneOf', 'allOf', '$ref', 'const', 'enum'];

/**
 * A declared answer as an OpenAPI Response Object: a schema means JSON; an object with
 * `content` (Fastify's form for other media types), or with no schema keyword (an answer without
 * a body), is one already.
 */
function declaredResponse(status: string, declared: Schema, names: NamedSchemas): Schema {
  const isResponse = 'content' in declared || !SCHEMA_KEYWORDS.some((k) => k in declared);
  const content = !isResponse
    ? { 'application/json': { schema: names.hoist(declared) } }
    : isObject(declared['content'])
      ? Object.fromEntries(
          Object.entries(declared['content']).map(([type, media]) => [
            type,
            { schema: names.hoist(objectOr(media)['schema']) },
          ]),
        )
      : undefined;
  const description =
    typeof declared['description'] === 'string'
      ? declared['description']
      : status.startsWith('2')
        ? 'Success'
        : 'Refused';
  const headers = isObject(declared['headers']) ? declared['headers'] : {};
  return { description, headers: { ...OK_HEADERS, ...headers }, content };
}

/**
 * Routes outside the envelopes answer what they declare. Errors that the error handler answers
 * for any route (a malformed query or path, an id that names nothing, a failure, shutting down)
 * come in the error envelope, unless the route answers RFC 6749 errors (it declares those).
 */
function plainResponses(route: RegisteredRoute, names: NamedSchemas): Schema {
  const schema = route.schema ?? {};
  const response = { ...objectOr(schema.response), ...schema.responses };
  const out: Record<string, Schema> = {};
  for (const [status, declared] of Object.entries(response)) {
    out[status.toUpperCase()] = declaredResponse(status, objectOr(declared), names);
  }
  if (route.oauth) return out;
  const generic = [400, 500, 503];
  if (schema.params) generic.push(404);
  for (const status of generic.sort((a, b) => a - b)) {
    const own = out[String(status)];
    if (!own) {
      out[String(status)] = ref('responses', `Error${status}`);
      continue;
    }
    // The route's own answer for this status, or the error envelope.
    const content = objectOr(own['content']);
    const json = isObject(content['application/json']) ? content['application/json'] : undefined;
    const envelope = ref('schemas', 'ErrorEnvelope');
    own['content'] = {
      ...content,
      'application/json': { schema: json ? { anyOf: [json['schema'], envelope] } : envelope },
    };
  }
  return out;
}

/** The parameters of a route: path, query and headers from its schemas; the headers every API route reads. */
function parametersOf(route: RegisteredRoute): unknown[] {
  const schema = route.schema ?? {};
  const parameters: unknown[] = [];
  for (const [where, part] of [
    ['path', objectOr(schema.params)],
    ['query', objectOr(schema.querystring)],
    ['header', objectOr(schema.headers)],
  ] as const) {
    const required = stringsOf(part['required']);
    for (const [name, s] of Object.entries(objectOr(part['properties']))) {
      const { description, ...rest } = objectOr(documented(s));
      parameters.push({
        name,
        in: where,
        ...(description ? { description } : {}),
        required: where === 'path' || required.includes(name),
        schema: rest,
      });
    }
  }
  if (route.scope && !route.variant) parameters.push(ref('parameters', 'EnvelopeVariant'));
  parameters.push(ref('parameters', 'RequestId'));
  return parameters;
}

function requestBodyOf(schema: FastifySchema & RouteDocs): Schema | undefined {
  if (schema.requestBody) return schema.requestBody;
  const body = schema.body;
  if (!isObject(body)) return undefined;
  const required = stringsOf(body['required']).length > 0;
  return {
    required,
    description: required
      ? undefined
      : 'Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored.',
    content: { 'application/json': { schema: documented(body) } },
  };
}

const TAG_DESCRIPTIONS: Record<string, string> = {
  Access: 'Checking credentials and the API version (scope `access`)',
  Products: 'The catalogue: products with their bounds and templates, and default plans (scope `products`)',
  Orders: 'Ordering a virtual server (scope `service`)',
  Services: 'Reading a service: details, status, jobs (scope `service`)',
  'Service actions':
    'Operations on a service; each is queued as a job and answered as soon as it is recorded (scope `service`)',
  Backups: 'Backups of a service (scope `service`)',
  'Backup schedules': 'Schedules that create backups (scope `service`)',
  OAuth: 'OAuth 2.0 client credentials (RFC 6749) and the authorization server metadata (RFC 8414)',
  Operations: 'Probes and metrics for the operator; the OpenAPI document and this reference',
  Operator: 'Who the operator is (scope `operator`)',
  Resellers: 'Resellers: their applications, quota and use; create, disable, enable (scope `operator`)',
  'Operator services': 'Services across resellers: the list, the details (scope `operator`)',
  'Operator service actions':
    'The reseller API’s operations on any reseller’s service, acting for the reseller (scope `operator`)',
  'Operator backups':
    'Backups and backup schedules of any reseller’s service, acting for the reseller (scope `operator`)',
  Jobs: 'Jobs across resellers: the list, retry a failed one, cancel a queued one (scope `operator`)',
  Hosts: 'Hypervisor hosts: capacity and use; drain and activate (scope `operator`)',
  'Operator usage':
    'Usage for invoicing: service-hours and resource-hours per reseller and product (scope `operator`)',
  Audit: 'The audit log: who changed what (scope `operator`)',
};

/** What the operator API's document says of itself. */
const OPERATOR_INFO = {
  title: 'Virtual Server Reseller Provisioning API: operator API',
  version: '1.0.0',
  description: [
    'The provider side: resellers, services across resellers, jobs, hosts, usage and the audit log.',
    '',
    'Every answer is a variant B envelope `{"status","message","data"}`; errors carry a stable',
    '`error_code`. Tokens come from the same token endpoint, with the scope `operator`, which only',
    'operator clients (`vrp operator create`) hold. docs/operator-api.md in the repository is the guide.',
  ].join('\n'),
  contact: { name: 'The provider operating this server' },
};

/** Which document: the reseller API's (docs/openapi.json) or the operator API's (docs/openapi-operator.json). */
export type DocumentKind = 'reseller' | 'operator';

/** Whether a route belongs to the operator API's document rather than the reseller API's. */
export function isOperatorRoute(route: Pick<RegisteredRoute, 'url'>): boolean {
  return route.url.startsWith(OPS);
}

const ENVELOPE_VARIANT_PARAMETER = {
  name: 'X-Envelope-Variant',
  in: 'header',
  required: false,
  description:
    'The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`.',
  schema: { type: 'string', enum: ['A', 'B'] },
};

/**
 * Members some errors of the operator API carry beside `error_code` (ApiError.fields), optional in
 * the error envelope of a document that has operator routes.
 */
const OPERATOR_ERROR_FIELDS: Schema = {
  retry_job_id: {
    type: 'string',
    format: 'uuid',
    description: 'Only with `job_already_retried`: the job the earlier retry queued',
  },
};

/** Variant B's error envelope; with operator routes it may carry OPERATOR_ERROR_FIELDS. */
function errorEnvelopeB(withOperatorRoutes: boolean, errorCode: Schema): Schema {
  const base = envelope('B', false, { type: 'array', items: {}, maxItems: 0 }, errorCode);
  if (!withOperatorRoutes) return base;
  const properties = isObject(base['properties']) ? base['properties'] : {};
  return { ...base, properties: { ...properties, ...OPERATOR_ERROR_FIELDS } };
}

/**
 * Components every document has: envelopes, the error answers `statuses` (those the operations
 * refer to), shared parameters and headers, security.
 */
function baseComponents(
  statuses: readonly number[],
  kind: DocumentKind,
  withOperatorRoutes: boolean,
): Schema {
  const allCodes = {
    type: 'string',
    enum: Object.keys(ERROR_CODES),
    description: 'docs/api.md, Error codes',
  };
  const errorCode = { error_code: allCodes };
  return {
    schemas: {
      ErrorEnvelope:
        kind === 'operator'
          ? {
              description: 'An error, in the variant B envelope (docs/design/contract.md#operator-api)',
              allOf: [ref('schemas', 'ErrorEnvelopeB')],
            }
          : {
              description: 'An error, in the envelope of the request (docs/design/contract.md#envelopes)',
              oneOf: [ref('schemas', 'ErrorEnvelopeB'), ref('schemas', 'ErrorEnvelopeA')],
            },
      ErrorEnvelopeB: errorEnvelopeB(withOperatorRoutes, errorCode),
      ...(kind === 'operator' ? {} : { ErrorEnvelopeA: envelope('A', false, { const: '[]' }, errorCode) }),
    },
    responses: Object.fromEntries(statuses.map((s) => [`Error${s}`, errorResponse(s)])),
    parameters: {
      ...(kind === 'operator' ? {} : { EnvelopeVariant: ENVELOPE_VARIANT_PARAMETER }),
      RequestId: {
        name: 'X-Request-Id',
        in: 'header',
        required: false,
        description: 'Echoed in the answer and logged with the request; else the server makes one',
        schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
      },
    },
    headers: {
      RequestId: {
        description: 'The id of the request in the server’s logs (the one sent, or a new UUID)',
        schema: { type: 'string' },
      },
      'WWW-Authenticate': {
        description:
          'RFC 6750 challenge: `Bearer realm=..., error="invalid_token"` or `"insufficient_scope"`',
        schema: { type: 'string' },
      },
      'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
    },
    securitySchemes: {
      oauth2: {
        type: 'oauth2',
        description: 'OAuth 2.0 client credentials (RFC 6749 section 4.4) at the token endpoint',
        flows: {
          clientCredentials: {
            tokenUrl: `${BASE}/oauth/token`,
            scopes:
              kind === 'operator'
                ? { [OPERATOR_SCOPE]: 'The operator API (operator clients only)' }
                : Object.fromEntries(SCOPES.map((s) => [s, `The ${s} operations`])),
          },
        },
      },
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description: 'An access token of the token endpoint, sent as `Authorization: Bearer <token>`',
      },
    },
  };
}

/**
 * OpenAPI 3.1 from the route schemas: the same TypeBox schemas that validate requests and
 * serialize answers, with each route's own metadata (RouteDocs). A new route needs nothing here.
 */
export function buildOpenApi(
  routes: readonly RegisteredRoute[],
  kind: DocumentKind = 'reseller',
): Record<string, unknown> {
  const names = new NamedSchemas();
  const paths: Record<string, Record<string, unknown>> = {};
  const tags = new Set<string>();
  const sorted = [...routes]
    .filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS')
    .sort((a, b) => byCodeUnits(a.url, b.url) || byCodeUnits(a.method, b.method));
  for (const r of sorted) {
    const schema = r.schema ?? {};
    for (const tag of schema.tags ?? []) tags.add(tag);
    const requestBody = requestBodyOf(schema);
    const op: Record<string, unknown> = {
      operationId: schema.operationId,
      tags: schema.tags,
      summary: schema.summary,
      description: schema.description,
      parameters: parametersOf(r),
      requestBody,
      responses: r.scope ? apiResponses(r, names) : plainResponses(r, names),
      security: r.scope ? [{ oauth2: [r.scope] }, { bearer: [] }] : undefined,
    };
    const path = toOpenApiPath(r.url);
    paths[path] ??= {};
    // Through JSON: the fields a route leaves out are left out, not written as undefined.
    paths[path][r.method.toLowerCase()] = JSON.parse(JSON.stringify(op));
  }
  const referred = JSON.stringify(paths).matchAll(/#\/components\/responses\/Error(\d+)/g);
  const components = baseComponents(
    [...new Set([...referred].map((m) => Number(m[1])))].sort((a, b) => a - b),
    kind,
    sorted.some(isOperatorRoute),
  );
  components['schemas'] = { ...objectOr(components['schemas']), ...names.schemas };
  return {
    openapi: '3.1.0',
    info:
      kind === 'operator'
        ? OPERATOR_INFO
        : {
            title: 'Virtual Server Reseller Provisioning API',
            version: API_VERSION,
            description: [
              'The provider side of the reseller provisioning API: resellers order and manage virtual servers.',
              '',
              'Every API answer is an envelope: variant B `{"status","message","data"}` (the default) or',
              'variant A `{"success","message","data"}` where `data` is the JSON text of the payload.',
              'An application has a default variant; `X-Envelope-Variant` overrides it per request.',
              'Errors carry a stable `error_code`. docs/api.md in the repository is the guide.',
            ].join('\n'),
            contact: { name: 'The provider operating this server' },
          },
    servers: [{ url: '/', description: 'This server' }],
    tags: [...tags].sort().map((name) => ({
      name,
      ...(TAG_DESCRIPTIONS[name] ? { description: TAG_DESCRIPTIONS[name] } : {}),
    })),
    paths,
    components,
  };
}
