/**
 * Holds every response a test sees to the OpenAPI document: the operation is found by method
 * and path, its answer by status (`404`, else `4XX`, else `default`), and the body is validated
 * with Ajv (JSON Schema 2020-12, formats asserted) against the schema of its media type; variant
 * A's `data` text is parsed and validated against its `contentSchema`. A response to a request
 * no operation matches (a wrong method, an unknown path, a request the HTTP parser refused)
 * must be one of the document's error envelopes. So the document cannot drift from the server.
 */

import { AssertionError } from 'node:assert';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { App } from '../../src/http/app.ts';
import { CONSOLE, SERVICE_CONSOLE } from '../../src/http/base-path.ts';
import { buildOpenApi, type RegisteredRoute } from '../../src/http/openapi.ts';

/** A response as any client saw it. */
export interface SeenResponse {
  readonly method: string;
  /** The request target: a path with its query, or an absolute URL. */
  readonly url: string;
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: string;
}

type Json = Record<string, any>;

interface Operation {
  readonly template: string;
  readonly pattern: RegExp;
  readonly params: number;
}

const pointer = (parts: readonly string[]) =>
  `#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

const isJsonType = (type: string) => type === 'application/json' || type.endsWith('+json');

/** The path of a request target (origin or absolute form), without its query. */
function pathOf(url: string): string {
  const path = url.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/, '').split('?')[0] ?? '';
  return path === '' ? '/' : path;
}

/** Checks responses against one document. */
export class ResponseChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly operations: Operation[];
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly doc: Json;

  constructor(doc: Json) {
    this.doc = doc;
    addFormats.default(this.ajv);
    this.ajv.addSchema(doc, 'openapi');
    // Static segments before parameters, as the router matches them.
    this.operations = Object.keys(doc['paths'])
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+').replace(/\/$/, '')}/?$`),
        params: (template.match(/\{/g) ?? []).length,
      }))
      .sort((a, b) => a.params - b.params);
  }

  private validator(parts: readonly string[]): ValidateFunction {
    const at = pointer(parts);
    let validate = this.validators.get(at);
    if (!validate) {
      validate = this.ajv.getSchema(`openapi${at}`);
      if (!validate) throw new Error(`the document has no schema at ${at}`);
      this.validators.set(at, validate);
    }
    return validate;
  }

  /** The value at `parts` of the document, following a `$ref` there. */
  private resolve(parts: string[]): { value: Json; parts: string[] } {
    let value: any = this.doc;
    for (const p of parts) value = value?.[p];
    if (typeof value?.$ref === 'string') {
      const target = (value.$ref as string).replace(/^#\//, '').split('/');
      return this.resolve(target.map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~')));
    }
    return { value, parts };
  }

  /** What is wrong with `res` as the answer the document gives, or undefined. */
  problem(res: SeenResponse): string | undefined {
    const method = res.method.toUpperCase();
    const path = pathOf(res.url);
    // The console's pages are HTML for a browser, not the API (test/console/ checks them).
    if (path === CONSOLE || path.startsWith(`${CONSOLE}/`)) return undefined;
    // So is a service's console in the browser (test/http/service-console.test.ts checks it).
    if (path.startsWith(`${SERVICE_CONSOLE}/`)) return undefined;
    // A CORS preflight's 204 is the CORS protocol's answer, not an operation's (test/http/cors.test.ts).
    if (method === 'OPTIONS' && res.status === 204 && res.body === '') return undefined;
    const opMethod = (method === 'HEAD' ? 'get' : method.toLowerCase()) as string;
    const match = this.operations.find(
      (o) => o.pattern.test(path) && this.doc['paths'][o.template][opMethod],
    );
    const status = String(res.status);
    const mediaType = (res.contentType ?? '').split(';')[0]!.trim().toLowerCase();
    if (!match) {
      if (res.status < 400) return `${method} ${path}: no operation of the document, yet answered ${status}`;
      if (method === 'HEAD') return undefined;
      return this.validate(
        ['components', 'schemas', 'ErrorEnvelope'],
        res,
        `${method} ${path} (no operation)`,
      );
    }
    const opParts = ['paths', match.template, opMethod];
    const op = this.resolve(opParts).value;
    const what = `${method} ${path} (${op['operationId'] ?? match.template}) answered ${status}`;
    const declared = [status, `${status[0]}XX`, 'default'].find(
      (code) => op['responses']?.[code] !== undefined,
    );
    if (!declared) return `${what}: the document declares no such answer`;
    const answer = this.resolve([...opParts, 'responses', declared]);
    const content = answer.value['content'] as Json | undefined;
    if (!content) return res.body === '' ? undefined : `${what}: the document declares no body`;
    if (method === 'HEAD') return undefined;
    if (!(mediaType in content)) {
      return `${what} as ${mediaType || 'no media type'}; the document says ${Object.keys(content).join(', ')}`;
    }
    const schemaParts = [...answer.parts, 'content', mediaType, 'schema'];
    if (isJsonType(mediaType)) return this.validate(schemaParts, res, what);
    const schema = content[mediaType]['schema'] as Json | undefined;
    if (schema?.['type'] === 'string' && !mediaType.startsWith('image/')) {
      return this.validate(schemaParts, { ...res, body: JSON.stringify(res.body) }, what);
    }
    return undefined;
  }

  private validate(schemaParts: readonly string[], res: SeenResponse, what: string): string | undefined {
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      return `${what}: the body is not JSON: ${res.body.slice(0, 200)}`;
    }
    const validate = this.validator(schemaParts);
    if (!validate(body)) {
      return `${what}: ${this.ajv.errorsText(validate.errors)}\n${res.body.slice(0, 1500)}`;
    }
    return this.checkVariantA(schemaParts, body, what);
  }

  /** Variant A's `data` is JSON text: the payload it holds is checked against its `contentSchema`. */
  private checkVariantA(schemaParts: readonly string[], body: any, what: string): string | undefined {
    if (typeof body?.success !== 'string' || typeof body.data !== 'string') return undefined;
    const { value, parts } = this.resolve([...schemaParts]);
    const branches = (value['oneOf'] ?? []) as Json[];
    const at = branches.findIndex((b) => b['properties']?.data?.contentSchema !== undefined);
    if (at < 0) return undefined;
    const validate = this.validator([...parts, 'oneOf', String(at), 'properties', 'data', 'contentSchema']);
    if (!validate(JSON.parse(body.data))) {
      return `${what}, variant A's data: ${this.ajv.errorsText(validate.errors)}\n${body.data.slice(0, 1500)}`;
    }
    return undefined;
  }

  /** Throws (failing the test that saw it) if `res` is not an answer the document gives. */
  assert(res: SeenResponse): void {
    const problem = this.problem(res);
    if (problem !== undefined) {
      throw new AssertionError({ message: `The response does not match docs/openapi.json: ${problem}` });
    }
  }
}

const checkers = new Map<string, ResponseChecker>();

/** The checker of `doc` (one per distinct document in a test process: Ajv compiles once). */
export function checkerFor(doc: Json): ResponseChecker {
  const key = JSON.stringify(doc);
  let checker = checkers.get(key);
  if (!checker) {
    checker = new ResponseChecker(doc);
    checkers.set(key, checker);
  }
  return checker;
}

const byRoutes = new Map<string, ResponseChecker>();

/**
 * The checker of the document built from `routes`: built once per distinct set of routes in a
 * test process (routes as JSON: ~0.7 ms; building the document and its text: ~5 ms, and test
 * apps are built by the hundred, nearly all with the same routes).
 */
function checkerForRoutes(routes: readonly RegisteredRoute[]): ResponseChecker {
  const key = JSON.stringify(routes);
  let checker = byRoutes.get(key);
  if (!checker) {
    checker = checkerFor(buildOpenApi(routes));
    byRoutes.set(key, checker);
  }
  return checker;
}

/** The checker of the committed docs/openapi.json, for clients of real server processes. */
export function committedDocumentChecker(): ResponseChecker {
  return checkerFor(JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')));
}

/** Records what a response writes, for checking once it is sent. */
function capture(res: ServerResponse, done: (body: string, contentType: string | undefined) => void): void {
  const chunks: Buffer[] = [];
  // Fastify hands its headers to writeHead, which does not keep them for getHeader.
  let contentType: string | undefined;
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    const headers = args.find((a) => typeof a === 'object' && a !== null) as
      | Record<string, unknown>
      | undefined;
    const given = headers && Object.entries(headers).find(([k]) => k.toLowerCase() === 'content-type');
    if (given) contentType = String(given[1]);
    return writeHead(...args);
  }) as ServerResponse['writeHead'];
  const keep = (chunk: unknown) => {
    if (typeof chunk === 'string' || chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    keep(chunk);
    return write(chunk, ...rest);
  }) as ServerResponse['write'];
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    keep(chunk);
    return end(chunk, ...rest);
  }) as ServerResponse['end'];
  res.once('finish', () =>
    done(
      Buffer.concat(chunks).toString('utf8'),
      contentType ?? (res.getHeader('content-type') as string | undefined),
    ),
  );
}

/**
 * Checks every answer of `app` against the document built from its own routes: `app.inject`
 * answers at once (the awaiting test fails); answers on real sockets, as written, are collected
 * for `problems()` (the harness fails the test when it closes the app).
 */
export function checkResponses(app: App): { problems(): string[] } {
  let checker: ResponseChecker | undefined;
  const checkerOf = () => {
    checker ??= checkerForRoutes(app.registeredRoutes);
    return checker;
  };
  const seen: string[] = [];
  // Before Fastify's own listener: every request that reaches the HTTP server.
  app.server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    capture(res, (body, contentType) => {
      const problem = checkerOf().problem({
        method: req.method ?? '',
        url: req.url ?? '',
        status: res.statusCode,
        contentType,
        body,
      });
      if (problem !== undefined) seen.push(problem);
    });
  });
  const inject = app.inject.bind(app);
  app.inject = ((options?: unknown, callback?: unknown) => {
    // The chained and callback forms are not used by the tests; they pass unchecked.
    if (options === undefined || callback !== undefined) return (inject as any)(options, callback);
    return (inject(options as any) as Promise<any>).then((res) => {
      checkerOf().assert({
        method: res.raw.req.method,
        url: res.raw.req.url,
        status: res.statusCode,
        contentType: res.headers['content-type'],
        body: res.body,
      });
      return res;
    });
  }) as App['inject'];
  return { problems: () => [...seen] };
}
