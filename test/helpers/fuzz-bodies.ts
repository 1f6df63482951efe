/**
 * Request bodies for the fuzz test: one the route's JSON schema accepts (fields drawn mostly
 * from realistic values), then broken in one way: wrong types, missing or extra fields, huge
 * strings, U+0000 and lone surrogates, arrays and scalars, text that is not JSON, form and
 * text/plain bodies, more than the body limit. Each broken body says what the API must
 * answer to it when nothing else is wrong with the request.
 */
import fc from 'fast-check';
import type { JsonSchema } from './fuzz-routes.ts';

/** Realistic values by body field name (product ids, templates, schedule times...). */
export type FuzzHints = Readonly<Record<string, readonly unknown[]>>;

function fromSchema(schema: JsonSchema | undefined): fc.Arbitrary<unknown> {
  if (!schema) return fc.jsonValue({ maxDepth: 2 });
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'string':
      return schema.pattern
        ? fc.stringMatching(new RegExp(schema.pattern))
        : fc.string({
            minLength: schema.minLength ?? 0,
            maxLength: Math.max(schema.minLength ?? 0, Math.min(schema.maxLength ?? 40, 40)),
          });
    case 'integer': {
      const min = schema.minimum ?? -(2 ** 31);
      const max = schema.maximum ?? 2 ** 31;
      return fc.oneof(
        fc.integer({ min: Math.max(min, 0), max: Math.min(max, 64) }),
        fc.integer({ min, max }),
      );
    }
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 4 });
    case 'object':
      return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 });
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A body the route's schema accepts, its fields drawn mostly from realistic values. */
export function validBodyArb(schema: JsonSchema, hints: FuzzHints): fc.Arbitrary<Record<string, unknown>> {
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, s] of Object.entries(schema.properties ?? {})) {
    const hint = hints[name];
    model[name] =
      hint && hint.length > 0
        ? fc.oneof(
            { weight: 4, arbitrary: fc.constantFrom(...hint) },
            { weight: 1, arbitrary: fromSchema(s) },
          )
        : fromSchema(s);
  }
  return fc.record(model, { requiredKeys: [...(schema.required ?? [])] }) as fc.Arbitrary<
    Record<string, unknown>
  >;
}

/** How a valid body is broken before it is sent. */
export type Mutation =
  | { readonly kind: 'valid' }
  | { readonly kind: 'none' }
  | { readonly kind: 'empty' }
  | { readonly kind: 'wrong-type'; readonly pick: number; readonly value: unknown }
  | { readonly kind: 'extra'; readonly key: string; readonly value: unknown }
  | { readonly kind: 'missing'; readonly pick: number }
  | { readonly kind: 'huge-string'; readonly pick: number; readonly length: number }
  | { readonly kind: 'nul' | 'surrogate'; readonly pick: number; readonly at: number; readonly unit: string }
  | { readonly kind: 'array' }
  | { readonly kind: 'scalar'; readonly value: unknown }
  | { readonly kind: 'not-json'; readonly text: string }
  | { readonly kind: 'form' }
  | { readonly kind: 'text-plain' }
  | { readonly kind: 'content-type'; readonly type: string }
  | { readonly kind: 'too-large' }
  | { readonly kind: 'deep'; readonly depth: number };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 14, arbitrary: fc.constant({ kind: 'valid' as const }) },
  { weight: 4, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'empty' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('wrong-type' as const),
      pick: fc.nat(),
      value: fc.constantFrom<unknown>('1', 1, 1.5, -1, true, null, [], {}, 1e300, 'x', [1, 2]),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('extra' as const),
      key: fc.oneof(
        fc.constantFrom('__proto__', 'constructor', 'prototype', 'status', 'id', ''),
        fc.string(),
      ),
      value: fc.jsonValue({ maxDepth: 2 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('missing' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('huge-string' as const),
      pick: fc.nat(),
      length: fc.oneof(fc.integer({ min: 65, max: 2000 }), fc.integer({ min: 2000, max: 300_000 })),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('nul' as const),
      pick: fc.nat(),
      at: fc.nat(),
      unit: fc.constant('\u0000'),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('surrogate' as const),
      pick: fc.nat(),
      at: fc.nat(),
      unit: fc.constantFrom('\ud800', '\udfff', '\udc00\ud800'),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'array' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('scalar' as const),
      value: fc.constantFrom<unknown>(42, 'text', null, true, [], 0),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('not-json' as const),
      text: fc.oneof(
        fc.constantFrom(
          '{',
          '{"a":',
          "{'a':1}",
          'NaN',
          'undefined',
          '[1,]',
          '\u0000',
          '{"a":1}{"b":2}',
          '\ufeff{}',
          '{"a":1,"a":2}',
          '"\\ud800"',
          '1e999999',
        ),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
      ),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'form' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'text-plain' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('content-type' as const),
      type: fc.constantFrom(
        '',
        'multipart/form-data; boundary=x',
        'application/xml',
        'application/octet-stream',
        'application/json; charset=latin1',
        'APPLICATION/JSON',
        'application/json-patch+json',
        'application/json, text/plain',
        '*/*',
        'text/json',
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'too-large' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('deep' as const),
      depth: fc.integer({ min: 500, max: 20_000 }),
    }),
  },
);

/** What a request must be answered with (status and error_code), when nothing else is wrong with it. */
export interface Outcome {
  /** An HTTP status, or any 4xx. */
  readonly status: number | '4xx';
  readonly code?: string;
  /** The rule, for reports: "a text/plain body is 415". */
  readonly rule: string;
}

export interface SerializedBody {
  readonly payload: string | undefined;
  readonly contentType: string | undefined;
  /** The body still satisfies the schema: only the path and state decide the answer. */
  readonly valid: boolean;
  readonly outcome: Outcome | undefined;
}

function pickOf<T>(items: readonly T[], n: number): T | undefined {
  return items.length === 0 ? undefined : items[n % items.length];
}

/** Does `value` break `schema` (the subset of JSON Schema route bodies use)? */
function breaks(schema: JsonSchema | undefined, value: unknown): boolean {
  if (!schema) return false;
  switch (schema.type) {
    case 'string':
      return (
        typeof value !== 'string' ||
        [...value].length > (schema.maxLength ?? Number.POSITIVE_INFINITY) ||
        [...value].length < (schema.minLength ?? 0)
      );
    case 'integer':
      return (
        typeof value !== 'number' ||
        !Number.isInteger(value) ||
        value < (schema.minimum ?? Number.NEGATIVE_INFINITY) ||
        value > (schema.maximum ?? Number.POSITIVE_INFINITY)
      );
    default:
      return false;
  }
}

const INVALID: Outcome = {
  status: 400,
  code: 'validation_failed',
  rule: 'a body the schema refuses is 400',
};
const NOT_JSON: Outcome = {
  status: 415,
  code: 'unsupported_media_type',
  rule: 'a body that is not application/json is 415',
};

/** The text that goes on the wire for `base` broken by `m`, and what the route must answer. */
export function serializeBody(
  base: Record<string, unknown>,
  schema: JsonSchema | undefined,
  m: Mutation,
): SerializedBody {
  const props = schema?.properties ?? {};
  const fields = Object.keys(props);
  const strings = fields.filter((f) => props[f]?.type === 'string');
  const required = schema?.required ?? [];
  const body = { ...base };
  const json = (value: unknown, outcome?: Outcome, valid = false): SerializedBody => ({
    payload: JSON.stringify(value),
    contentType: 'application/json',
    valid,
    outcome,
  });
  switch (m.kind) {
    case 'valid':
      return json(body, undefined, true);
    case 'none':
      return {
        payload: undefined,
        contentType: undefined,
        valid: required.length === 0,
        outcome: required.length === 0 ? undefined : INVALID,
      };
    case 'empty':
      return {
        payload: '',
        contentType: 'application/json',
        valid: required.length === 0,
        outcome: required.length === 0 ? undefined : INVALID,
      };
    case 'wrong-type': {
      const f = pickOf(fields, m.pick) ?? 'field';
      body[f] = m.value;
      return json(body, breaks(props[f], m.value) ? INVALID : undefined);
    }
    case 'extra':
      // Defined, not assigned: `__proto__` must become a key of the JSON text.
      Object.defineProperty(body, m.key, {
        value: m.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      return json(body);
    case 'missing': {
      const f = pickOf(required.length > 0 ? required : fields, m.pick);
      if (f) delete body[f];
      return json(body, f !== undefined && required.includes(f) ? INVALID : undefined);
    }
    case 'huge-string': {
      const f = pickOf(fields, m.pick) ?? 'field';
      body[f] = 'x'.repeat(m.length);
      return json(body, breaks(props[f], body[f]) ? INVALID : undefined);
    }
    case 'nul':
    case 'surrogate': {
      const f = pickOf(strings, m.pick) ?? pickOf(fields, m.pick) ?? 'field';
      const old = typeof body[f] === 'string' ? (body[f] as string) : 'text';
      const at = m.at % (old.length + 1);
      body[f] = `${old.slice(0, at)}${m.unit}${old.slice(at)}`;
      // No store can hold it (src/domain/storable-text.ts): refused, whichever 4xx.
      return json(body, {
        status: '4xx',
        rule: `${m.kind === 'nul' ? 'U+0000' : 'a lone surrogate'} in ${f} is refused`,
      });
    }
    case 'array':
      return json([body], INVALID);
    case 'scalar':
      // `null` is read as no body at all.
      return json(m.value, m.value === null ? undefined : INVALID);
    case 'not-json': {
      let parsed: unknown;
      let outcome: Outcome | undefined = INVALID;
      try {
        const text = m.text.trim();
        parsed = text === '' ? undefined : JSON.parse(text);
        outcome = typeof parsed === 'object' && !Array.isArray(parsed) ? undefined : INVALID;
      } catch {}
      return { payload: m.text, contentType: 'application/json', valid: false, outcome };
    }
    case 'form': {
      const form = new URLSearchParams();
      for (const [k, v] of Object.entries(body))
        form.append(k, typeof v === 'string' ? v : JSON.stringify(v));
      const payload = form.toString();
      // An empty body is no body, whatever its type (docs/api.md, Requests): `curl -d ''` and
      // billing modules POST empty forms to operations that take no body.
      return {
        payload,
        contentType: 'application/x-www-form-urlencoded',
        valid: false,
        outcome: payload === '' ? undefined : NOT_JSON,
      };
    }
    case 'text-plain':
      return { payload: JSON.stringify(body), contentType: 'text/plain', valid: false, outcome: NOT_JSON };
    case 'content-type': {
      const media = m.type.split(';')[0]!.trim().toLowerCase();
      return {
        payload: JSON.stringify(body),
        contentType: m.type === '' ? undefined : m.type,
        valid: media === 'application/json',
        outcome: media === 'application/json' ? undefined : NOT_JSON,
      };
    }
    case 'too-large':
      return json(
        { ...body, padding: 'x'.repeat(1024 * 1024 + 16) },
        {
          status: 413,
          code: 'payload_too_large',
          rule: 'a body over 1 MiB is 413',
        },
      );
    case 'deep': {
      const text = JSON.stringify(body);
      const nested = `${'['.repeat(m.depth)}${']'.repeat(m.depth)}`;
      const sep = text === '{}' ? '' : ',';
      return {
        payload: `${text.slice(0, -1)}${sep}"deep":${nested}}`,
        contentType: 'application/json',
        valid: false,
        outcome: undefined,
      };
    }
  }
}
