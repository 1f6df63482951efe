/**
 * Generators of HTTP requests for the fuzz test: for each route of the OpenAPI document, the
 * right and wrong methods, path ids (ours, another reseller's, random, malformed, too long),
 * bodies built from the route's schema and then broken, and the headers that choose the
 * envelope, authenticate and make orders idempotent. Each request carries what a correct
 * server must answer to it (`expect`), which fuzz-checks.ts holds the response to.
 */
import fc from 'fast-check';
import type { Variant } from '../../src/http/envelope.ts';
import { API, BASE } from './app.ts';
import { type FuzzHints, mutationArb, type Outcome, serializeBody, validBodyArb } from './fuzz-bodies.ts';
import type { FuzzRoute } from './fuzz-routes.ts';

/** An Authorization header the fuzzer may send, and what the server knows from it. */
export interface FuzzAuth {
  readonly label: string;
  readonly authorization: string | undefined;
  /**
   * The variant of the application the token names under a valid signature (expired or not):
   * docs/design/contract.md#envelopes answers such requests in it. Undefined for no or forged
   * tokens.
   */
  readonly variant: Variant | undefined;
  /** Whose token it is, when it authenticates: the reseller under test (`own`) or another one. */
  readonly tenant: 'own' | 'other' | undefined;
  readonly scopes: readonly string[];
  /** How often it is picked, relative to the others. */
  readonly weight: number;
}

/** Path ids of one kind (services, backups...), by owner. */
export interface IdPool {
  readonly own: readonly string[];
  readonly other: readonly string[];
  readonly shared: readonly string[];
}

/** The data the generators draw from, made by fuzz-world.ts against a running app. */
export interface FuzzWorld {
  /** Authorization headers for API routes (bearer tokens of every kind, and none). */
  readonly auths: readonly FuzzAuth[];
  /** Authorization headers for the token endpoint (HTTP Basic client credentials). */
  readonly basics: readonly FuzzAuth[];
  /** Ids by path parameter name: the two resellers' own, and those every reseller shares (products). */
  readonly ids: Readonly<Record<string, IdPool>>;
  readonly hints: FuzzHints;
  /** Text only the owner may ever see (its servers' passwords and host names). */
  readonly secrets: { readonly own: readonly string[]; readonly other: readonly string[] };
  /**
   * The one envelope variant every answer is in, whatever the request asks (the operator API's
   * B: its routes ignore X-Envelope-Variant); undefined: the request's, as the reseller API.
   */
  readonly envelope?: Variant;
  /** Query strings for a route, in place of the generic ones (the operator API's filters and cursors). */
  readonly queryArb?: (route: FuzzRoute) => fc.Arbitrary<QueryPart>;
  /** Where paths that are no route start (default: the reseller API's prefixes). */
  readonly unknownPrefixes?: readonly string[];
}

/** The format a response must have. */
export type Format = 'envelope' | 'token' | 'metadata' | 'healthz' | 'readyz' | 'metrics' | 'any';

export interface Expectation {
  /** `METHOD /template` of the route aimed at, for grouping failures. */
  readonly route: string;
  readonly format: Format;
  /** The envelope variant the answer must be in (when the format is the envelope). */
  readonly variant: Variant;
  /** A request id the answer must echo. */
  readonly requestId: string | undefined;
  /** What the answer's status and error_code must be, when the request decides it alone. */
  readonly outcome: Outcome | undefined;
  /** Text that must not appear in the answer (another tenant's secrets). */
  readonly forbidden: readonly string[];
  /** What was fuzzed, for reading a failure. */
  readonly tags: readonly string[];
}

export interface FuzzRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: string | undefined;
  readonly expect: Expectation;
  /** The loopback address it comes from: failure throttles count per address. */
  readonly peer: string;
  /**
   * When a path id belongs to the reseller the token does not: the same request with that id
   * replaced by one nobody has. Both must get the same answer (docs/design/contract.md#tenancy:
   * another reseller's object is indistinguishable from a missing one).
   */
  readonly twin?: FuzzRequest | undefined;
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'] as const;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A known path with another method (docs/design/contract.md#addresses). */
const WRONG_METHOD: Outcome = {
  status: 405,
  code: 'method_not_allowed',
  rule: 'a known path with another method is 405',
};

/** Segments that trip decoders: invalid and overlong UTF-8, NUL, traversal, encoded slashes. */
export const BAD_SEGMENTS = [
  '%ff',
  '%00',
  '..%2F',
  '%2e%2e',
  '%',
  '%zz',
  '%E2%82',
  '%C0%AF',
  '%ED%A0%80',
  '%F0%9F%92%A9',
  '%0A',
  '%u0000',
  'ü',
  'a%20b',
  '.',
  '..',
  '%2F',
  '0',
  "'--",
] as const;

/** `encodeURIComponent` that survives lone surrogates (they become U+FFFD). */
export const encodeSegment = (s: string) => encodeURIComponent(s.toWellFormed());

// ---------------------------------------------------------------------------------------------
// Path ids

interface PathValue {
  readonly text: string;
  readonly origin: 'own' | 'other' | 'shared' | 'random' | 'bad' | 'long';
}

function pathValueArb(name: string, world: FuzzWorld): fc.Arbitrary<PathValue> {
  const pool = world.ids[name] ?? { own: [], other: [], shared: [] };
  const choices: fc.WeightedArbitrary<PathValue>[] = [
    { weight: 2, arbitrary: fc.uuid().map((text) => ({ text, origin: 'random' as const })) },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom(...BAD_SEGMENTS),
          fc.string({ unit: 'binary', maxLength: 24 }).map(encodeSegment),
        )
        .map((text) => ({ text, origin: 'bad' as const })),
    },
    {
      weight: 1,
      arbitrary: fc
        .oneof(fc.integer({ min: 65, max: 200 }), fc.integer({ min: 201, max: 600 }), fc.constant(10_000))
        .map((n) => ({ text: 'a'.repeat(n), origin: 'long' as const })),
    },
  ];
  if (pool.own.length > 0) {
    choices.push({
      weight: 6,
      arbitrary: fc.constantFrom(...pool.own).map((text) => ({ text, origin: 'own' })),
    });
    // Ids are matched in any case (docs/api.md).
    choices.push({
      weight: 1,
      arbitrary: fc.constantFrom(...pool.own).map((id) => ({ text: id.toUpperCase(), origin: 'own' })),
    });
  }
  if (pool.shared.length > 0) {
    choices.push({
      weight: 6,
      arbitrary: fc.constantFrom(...pool.shared).map((text) => ({ text, origin: 'shared' })),
    });
  }
  if (pool.other.length > 0) {
    choices.push({
      weight: 3,
      arbitrary: fc.constantFrom(...pool.other).map((text) => ({ text, origin: 'other' })),
    });
  }
  return fc.oneof(...choices);
}

// ---------------------------------------------------------------------------------------------
// Query strings

export interface QueryPart {
  readonly text: string;
  readonly valid: boolean;
  /** What the route must answer to this query when nothing else is wrong with the request. */
  readonly outcome?: Outcome | undefined;
}

function queryArb(route: FuzzRoute): fc.Arbitrary<QueryPart> {
  const params = route.query.map((q) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant<QueryPart>({ text: '', valid: true }) },
      {
        weight: 2,
        arbitrary: (q.schema.pattern
          ? fc.stringMatching(new RegExp(q.schema.pattern))
          : fc.string({ maxLength: 10 })
        ).map((v) => ({ text: `${q.name}=${encodeURIComponent(v)}`, valid: true })),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom('abc', '-1', '99999', '', '1.5', '%zz', '%00', '1&limit=2', '1e3', '%20%31')
          .map((v) => ({ text: `${q.name}=${v}`, valid: false })),
      },
    ),
  );
  const extra = fc.oneof(
    { weight: 6, arbitrary: fc.constant<QueryPart>({ text: '', valid: true }) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.constantFrom(
            '%zz',
            'a[b]=c',
            '__proto__[x]=1',
            'constructor=1',
            '=',
            '&&',
            `x=${'y'.repeat(5000)}`,
          ),
          fc.tuple(fc.string(), fc.string()).map(([k, v]) => `${encodeSegment(k)}=${encodeSegment(v)}`),
        )
        .map((text) => ({ text, valid: false })),
    },
  );
  return fc.tuple(fc.tuple(...params), extra).map(([ps, x]) => {
    const all = [...ps, x].filter((p) => p.text !== '');
    return { text: all.map((p) => p.text).join('&'), valid: [...ps, x].every((p) => p.valid) };
  });
}

// ---------------------------------------------------------------------------------------------
// Headers

const variantHeaderArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.constant('A') },
  { weight: 2, arbitrary: fc.constant('B') },
  { weight: 1, arbitrary: fc.constantFrom('a', 'b', 'C', '', 'AB', 'A,B', '0', 'true') },
);

const idempotencyKeyArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 8, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.constantFrom('order-1', 'order-2', 'x') },
  { weight: 1, arbitrary: fc.constantFrom('', 'k'.repeat(300), 'has space', 'caf\u00e9') },
);

const requestIdArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.stringMatching(REQUEST_ID) },
  { weight: 1, arbitrary: fc.constantFrom('bad id', 'r'.repeat(200), 'caf\u00e9', '') },
);

/**
 * A loopback address (127.0.0.0/8): the token endpoint throttles an address after a few
 * failures, which would otherwise hide everything behind it after the first few requests.
 */
export const peerArb: fc.Arbitrary<string> = fc
  .tuple(fc.nat(255), fc.nat(255), fc.integer({ min: 1, max: 254 }))
  .map(([a, b, c]) => `127.${a}.${b}.${c}`);

function authArb(auths: readonly FuzzAuth[]): fc.Arbitrary<FuzzAuth> {
  return fc.oneof(...auths.map((a) => ({ weight: a.weight, arbitrary: fc.constant(a) })));
}

// ---------------------------------------------------------------------------------------------
// Requests

/**
 * The envelope variant docs/design/contract.md#envelopes asks for: the header's, else the
 * application's, else B.
 */
function expectedVariant(header: string | undefined, auth: FuzzAuth): Variant {
  if (header === 'A' || header === 'B') return header;
  return auth.variant ?? 'B';
}

function formatOf(route: FuzzRoute, rightMethod: boolean): Format {
  if (!rightMethod) return 'envelope';
  switch (route.kind) {
    case 'api':
      return 'envelope';
    case 'other':
      return 'any';
    default:
      return route.kind;
  }
}

function forbiddenFor(auth: FuzzAuth, world: FuzzWorld): string[] {
  return [
    ...(auth.tenant === 'own' ? [] : world.secrets.own),
    ...(auth.tenant === 'other' ? [] : world.secrets.other),
  ];
}

/** A printable request: fast-check shows counterexamples with this, bodies cut short. */
export function withDescription<R extends FuzzRequest>(req: R): R {
  return Object.assign(req, { [fc.toStringMethod]: () => describeRequest(req) });
}

const validVariantHeader = (h: string | undefined) => h === undefined || h === 'A' || h === 'B';

/**
 * What a request must be answered with when both its body and its query decide it: the one
 * outcome when only one does, else what both share (which is checked first is the route's affair).
 */
function bothOutcomes(a: Outcome | undefined, b: Outcome | undefined): Outcome | undefined {
  if (!a || !b) return a ?? b;
  const status = a.status === b.status ? a.status : '4xx';
  return {
    status,
    ...(status !== '4xx' && a.code === b.code && a.code !== undefined ? { code: a.code } : {}),
    rule: `${a.rule}; ${b.rule}`,
  };
}

/** Requests aimed at `route`; `allowed`: every method its path has (some have GET and POST). */
function routeRequestArb(
  route: FuzzRoute,
  allowed: readonly string[],
  world: FuzzWorld,
): fc.Arbitrary<FuzzRequest> {
  // HEAD is served wherever GET is.
  const wrong: string[] = METHODS.filter(
    (m) => !allowed.includes(m) && !(m === 'HEAD' && allowed.includes('GET')),
  );
  return fc
    .record({
      method: fc.oneof(
        { weight: 6, arbitrary: fc.constant<string>(route.method) },
        { weight: 1, arbitrary: fc.constantFrom<string>(...wrong) },
      ),
      params: fc.tuple(...route.pathParams.map((p) => pathValueArb(p, world))),
      // Stands in for another reseller's ids in the twin request.
      missingId: fc.uuid(),
      peer: peerArb,
      query: world.queryArb ? world.queryArb(route) : queryArb(route),
      auth: authArb(route.kind === 'token' ? [...world.basics, ...world.auths] : world.auths),
      variantHeader: variantHeaderArb,
      idempotencyKey: idempotencyKeyArb,
      requestId: requestIdArb,
      base: route.body ? validBodyArb(route.body, world.hints) : fc.constant({}),
      mutation: route.body
        ? mutationArb
        : fc.oneof(
            { weight: 6, arbitrary: fc.constant({ kind: 'none' as const }) },
            { weight: 1, arbitrary: mutationArb },
          ),
      serviceIdInBody: fc.constantFrom('keep', 'omit', 'path', 'path'),
      trailingSlash: fc.oneof(
        { weight: 9, arbitrary: fc.constant(false) },
        { weight: 1, arbitrary: fc.constant(true) },
      ),
    })
    .map((r) => {
      const rightMethod = !wrong.includes(r.method);
      const origins = r.params.map((p) => p.origin);
      // An id of the reseller that the token does not belong to.
      const foreign = r.auth.tenant === 'own' ? 'other' : r.auth.tenant === 'other' ? 'own' : undefined;
      const routed =
        origins.every((o) => o !== 'bad' && o !== 'long') &&
        (world.envelope !== undefined || validVariantHeader(r.variantHeader));
      // Authenticated, routed, and so judged on its body.
      const reachesBody =
        r.method === route.method &&
        routed &&
        route.scope !== undefined &&
        r.auth.scopes.includes(route.scope);

      /** The request with these path ids: the twin differs only in them. */
      const assemble = (texts: readonly string[]) => {
        let path = route.template;
        route.pathParams.forEach((name, i) => {
          path = path.replace(`{${name}}`, texts[i]!);
        });
        if (r.trailingSlash) path += '/';
        const base: Record<string, unknown> = { ...r.base };
        const serviceIdIndex = route.pathParams.indexOf('service_id');
        if (route.body?.properties?.['service_id']) {
          if (r.serviceIdInBody === 'omit') delete base['service_id'];
          if (r.serviceIdInBody === 'path' && serviceIdIndex >= 0) base['service_id'] = texts[serviceIdIndex];
          if (r.serviceIdInBody === 'path' && serviceIdIndex < 0) delete base['service_id'];
        }
        const body = serializeBody(base, route.body, r.mutation);
        const headers: Record<string, string> = {};
        if (r.auth.authorization !== undefined) headers['authorization'] = r.auth.authorization;
        if (r.variantHeader !== undefined) headers['x-envelope-variant'] = r.variantHeader;
        if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
        if (r.requestId !== undefined) headers['x-request-id'] = r.requestId;
        if (body.contentType !== undefined) headers['content-type'] = body.contentType;
        const expect: Expectation = {
          route: `${route.method} ${route.template}`,
          format: formatOf(route, rightMethod),
          variant: world.envelope ?? expectedVariant(r.variantHeader, r.auth),
          requestId: r.requestId !== undefined && REQUEST_ID.test(r.requestId) ? r.requestId : undefined,
          outcome: rightMethod
            ? reachesBody
              ? bothOutcomes(
                  // A route without a body schema still refuses a body it cannot read (415,
                  // 413) before its query is judged: with a broken query too, either 4xx.
                  route.body || r.query.outcome ? body.outcome : undefined,
                  r.query.outcome,
                )
              : undefined
            : routed
              ? WRONG_METHOD
              : undefined,
          forbidden: forbiddenFor(r.auth, world),
          tags: [
            `method:${rightMethod ? 'right' : r.method}`,
            `auth:${r.auth.label}`,
            `variant:${r.variantHeader ?? '-'}`,
            `body:${r.mutation.kind}`,
            ...route.pathParams.map((p, i) => `${p}:${origins[i]}`),
          ],
        };
        return {
          method: r.method,
          url: r.query.text ? `${path}?${r.query.text}` : path,
          headers,
          payload: body.payload,
          expect,
          peer: r.peer,
        };
      };

      const req = assemble(r.params.map((p) => p.text));
      const crossTenant = foreign !== undefined && origins.includes(foreign);
      const twin = crossTenant
        ? withDescription(assemble(r.params.map((p) => (p.origin === foreign ? r.missingId : p.text))))
        : undefined;
      return withDescription({ ...req, twin });
    });
}

/** A path no route has: 404 in the envelope. */
function unknownRouteArb(world: FuzzWorld): fc.Arbitrary<FuzzRequest> {
  const ownService = world.ids['service_id']?.own[0] ?? '00000000-0000-4000-8000-000000000000';
  return fc
    .record({
      prefix: fc.constantFrom(...(world.unknownPrefixes ?? [API, BASE, '', `${API}/service/${ownService}`])),
      segments: fc.array(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 12 }).map((s) => `zz${encodeSegment(s)}`),
          fc.constantFrom(...BAD_SEGMENTS).map((s) => `zz${s}`),
        ),
        { minLength: 1, maxLength: 3 },
      ),
      method: fc.constantFrom(...METHODS),
      auth: authArb(world.auths),
      variantHeader: variantHeaderArb,
      peer: peerArb,
    })
    .map((r) => {
      const headers: Record<string, string> = {};
      if (r.auth.authorization !== undefined) headers['authorization'] = r.auth.authorization;
      if (r.variantHeader !== undefined) headers['x-envelope-variant'] = r.variantHeader;
      return withDescription({
        method: r.method,
        url: `${r.prefix}/${r.segments.join('/')}`,
        headers,
        payload: undefined,
        peer: r.peer,
        expect: {
          route: 'unknown route',
          format: 'envelope',
          variant: world.envelope ?? expectedVariant(r.variantHeader, r.auth),
          requestId: undefined,
          outcome: undefined,
          forbidden: forbiddenFor(r.auth, world),
          tags: [`auth:${r.auth.label}`, `variant:${r.variantHeader ?? '-'}`],
        },
      });
    });
}

/** Requests to every route of `routes` (equally often) and to paths that are no route. */
export function fuzzRequestArb(routes: readonly FuzzRoute[], world: FuzzWorld): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(
    {
      weight: 12,
      arbitrary: fc.oneof(
        ...routes.map((r) => ({
          // The token endpoint is one route but the only door without a token: more of it.
          weight: r.kind === 'token' ? 4 : 1,
          arbitrary: routeRequestArb(
            r,
            routes.filter((o) => o.template === r.template).map((o) => o.method),
            world,
          ),
        })),
      ),
    },
    { weight: 1, arbitrary: unknownRouteArb(world) },
  );
}

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

/** A request as a reader wants it in a failure report: escapes visible, long parts cut. */
export function describeRequest(req: FuzzRequest): string {
  const lines = [`${req.method} ${cut(JSON.stringify(req.url).slice(1, -1), 300)}`];
  for (const [k, v] of Object.entries(req.headers))
    lines.push(`  ${k}: ${cut(JSON.stringify(v).slice(1, -1), 120)}`);
  if (req.payload !== undefined) lines.push(`  body: ${cut(JSON.stringify(req.payload), 400)}`);
  lines.push(`  aimed at: ${req.expect.route} [${req.expect.tags.join(' ')}]`);
  return lines.join('\n');
}
