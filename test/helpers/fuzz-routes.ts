/**
 * The routes a fuzz test covers, read from the committed docs/openapi.json at test time, so a
 * route added to the app (and so to the document, which openapi.test.ts keeps in step) is
 * fuzzed without anyone remembering to list it.
 */
import { readFileSync } from 'node:fs';

/** The subset of JSON Schema the route schemas use. */
export interface JsonSchema {
  readonly type?: string;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly pattern?: string;
  readonly format?: string;
  readonly enum?: readonly unknown[];
}

/**
 * What a route answers in: `api` routes (those with a security requirement) answer in the
 * envelope; the others have formats of their own.
 */
export type RouteKind = 'api' | 'token' | 'metadata' | 'healthz' | 'readyz' | 'metrics' | 'other';

export interface FuzzRoute {
  readonly method: string;
  /** OpenAPI path template, `{name}` for path parameters. */
  readonly template: string;
  readonly kind: RouteKind;
  readonly scope: string | undefined;
  readonly pathParams: readonly string[];
  readonly query: readonly {
    readonly name: string;
    readonly schema: JsonSchema;
    readonly required: boolean;
  }[];
  readonly body: JsonSchema | undefined;
}

const TOKEN_PATH = '/vps_reseller_provider/public/oauth/token';

/**
 * The token endpoint's body is parsed by hand (form or JSON), so its route has no body
 * schema; this one describes RFC 6749 section 4.4's fields for generating requests.
 */
export const TOKEN_BODY: JsonSchema = {
  type: 'object',
  required: ['grant_type'],
  properties: {
    grant_type: { type: 'string' },
    client_id: { type: 'string' },
    client_secret: { type: 'string' },
    scope: { type: 'string' },
  },
};

function kindOf(path: string, secured: boolean): RouteKind {
  if (secured) return 'api';
  if (path === TOKEN_PATH) return 'token';
  if (path.startsWith('/.well-known/oauth-authorization-server')) return 'metadata';
  if (path === '/healthz' || path === '/readyz' || path === '/metrics') return path.slice(1) as RouteKind;
  return 'other';
}

interface OpenApiOperation {
  readonly security?: readonly unknown[];
  readonly parameters?: readonly {
    readonly name: string;
    readonly in: string;
    readonly required?: boolean;
    readonly schema: JsonSchema;
  }[];
  readonly requestBody?: { readonly content?: Readonly<Record<string, { readonly schema: JsonSchema }>> };
}

/** Every operation of an OpenAPI document (the reseller API's unless `file`), one entry per method and path. */
export function loadRoutes(
  file: URL = new URL('../../docs/openapi.json', import.meta.url),
): readonly FuzzRoute[] {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as {
    paths: Record<string, Record<string, OpenApiOperation>>;
  };
  const routes: FuzzRoute[] = [];
  for (const [template, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const security = op.security?.[0] as Record<string, string[]> | undefined;
      const kind = kindOf(template, security !== undefined);
      const params = op.parameters ?? [];
      routes.push({
        method: method.toUpperCase(),
        template,
        kind,
        scope: security ? Object.values(security)[0]?.[0] : undefined,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, schema: p.schema, required: p.required === true })),
        body: kind === 'token' ? TOKEN_BODY : op.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return routes;
}
