/**
 * The operator API for the fuzz test: its routes from docs/openapi-operator.json (read at run
 * time, so a new route is fuzzed without anyone listing it), a world of operator tokens and of
 * the ids and list cursors an operator sees, query strings built from each route's parameters
 * and then broken (unknown and repeated parameters, PHP's `x[]=` form, NUL and other control
 * characters, very long values, forged and garbage cursors), and a check of every answer
 * against the operator document.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import type { TestApp } from './app.ts';
import type { Outcome } from './fuzz-bodies.ts';
import type { FuzzResponse, Problem } from './fuzz-checks.ts';
import type { FuzzAuth, FuzzRequest, FuzzWorld, IdPool, QueryPart } from './fuzz-requests.ts';
import { type FuzzRoute, loadRoutes } from './fuzz-routes.ts';
import type { FuzzSetup } from './fuzz-world.ts';
import { createTestOperator, OPS, operatorToken, opsCall } from './operator.ts';
import { checkerFor } from './response-check.ts';

const OPERATOR_DOCUMENT = new URL('../../docs/openapi-operator.json', import.meta.url);

/** Every operation of docs/openapi-operator.json. */
export function loadOperatorRoutes(): readonly FuzzRoute[] {
  return loadRoutes(OPERATOR_DOCUMENT);
}

const operatorDocument = () => checkerFor(JSON.parse(readFileSync(OPERATOR_DOCUMENT, 'utf8')));

/**
 * The answer must be one docs/openapi-operator.json gives (its operation's, or its error envelope,
 * variant B). For requests sent through app.inject, which resolves dot segments as a URL parser does.
 */
export function checkOperatorDocument(req: FuzzRequest, res: FuzzResponse): Problem[] {
  const sent = new URL(req.url, 'http://localhost');
  const problem = operatorDocument().problem({
    method: req.method,
    url: `${sent.pathname}${sent.search}`,
    status: res.status,
    contentType: res.headers['content-type'] as string | undefined,
    body: res.body,
  });
  return problem === undefined ? [] : [{ check: 'operator-document', detail: problem }];
}

const b64 = (text: string) => Buffer.from(text).toString('base64url');

/** A cursor in the signed format of the operator API's lists, signed with `key` (not the server's). */
export function cursorSignedWith(key: Buffer, parts: readonly unknown[]): string {
  const payload = b64(JSON.stringify(parts));
  return `${payload}.${createHmac('sha256', key).update(payload).digest('base64url')}`;
}

/** The list name a cursor of route `template` carries: its last path segment (`.../services` -> services). */
export const listOf = (template: string) => template.slice(template.lastIndexOf('/') + 1);

/**
 * Cursors no list gave, in the cursor's own format or not, as text with no character a store
 * refuses: each must be 400 invalid_cursor. `given` is a cursor the list gave, to alter.
 */
export function forgedCursors(list: string, given: string | undefined): Record<string, string> {
  const forged: Record<string, string> = {
    'signed with another key': cursorSignedWith(randomBytes(32), [
      list,
      '00000000-0000-7000-8000-000000000000',
    ]),
    'well formed, unsigned': b64(JSON.stringify([list, '00000000-0000-7000-8000-000000000000'])),
    'well formed, a made-up signature': `${b64(JSON.stringify([list, 'a']))}.${b64('x'.repeat(32))}`,
    'a NUL inside, signed with another key': cursorSignedWith(randomBytes(32), [list, '\u0000']),
    'a NUL inside, unsigned': b64(JSON.stringify([list, 'a\u0000b'])),
    garbage: 'abc',
    'only dots': '...',
    'a control character': '\u0001',
    'CR LF': 'a\r\nb',
    'not base64url': '%%%',
  };
  if (given) {
    const [payload = '', mac = ''] = given.split('.');
    forged['a given one altered'] = `${payload.slice(0, -1)}${payload.endsWith('A') ? 'B' : 'A'}.${mac}`;
    forged['a given one without its signature'] = payload;
    forged['a given one with its signature twice'] = `${given}.${mac}`;
  }
  return forged;
}

/** The operator's side of a fuzz world: its cursors, by list, and the reseller world it was built on. */
export interface OperatorFuzzWorld extends FuzzWorld {
  /** A `next_cursor` each list gave (lists of one page have none). */
  readonly cursors: Readonly<Record<string, string>>;
  /** A valid operator token, for checking the server still works. */
  readonly liveToken: string;
}

const INVALID_QUERY: Outcome = {
  status: 400,
  code: 'validation_failed',
  rule: 'an unknown, repeated, array-form, malformed or unstorable query parameter is 400 validation_failed',
};
const INVALID_LIMIT: Outcome = {
  status: 400,
  code: 'validation_failed',
  rule: 'a limit outside 1..1000 is 400 validation_failed',
};
const INVALID_CURSOR: Outcome = {
  status: 400,
  code: 'invalid_cursor',
  rule: 'a cursor no list gave is 400 invalid_cursor',
};

/**
 * What a query parameter's value does to the answer: nothing (`ok`), refused by the route's
 * schema or before it (`schema`), by the list's limit check (`limit`), as a cursor no list gave
 * (`cursor`), or not known here (`unknown`: the route judges it, any well-formed answer will do).
 */
type Effect = 'ok' | 'schema' | 'limit' | 'cursor' | 'unknown';

interface Param {
  readonly text: string;
  readonly effect: Effect;
}

const LONG = 'x'.repeat(5000);
/** Values no parameter takes as they are: NUL and other control characters, very long ones. */
const NASTY: readonly (readonly [string, Effect])[] = [
  ['%00', 'schema'],
  ['a%00b', 'schema'],
  ['%ED%A0%80', 'unknown'],
  [LONG, 'schema'],
];

function valueArb(
  route: FuzzRoute,
  name: string,
  schema: FuzzRoute['query'][number]['schema'],
  world: { ids: Readonly<Record<string, IdPool>>; cursors: Readonly<Record<string, string>> },
): fc.Arbitrary<Param> {
  const enc = encodeURIComponent;
  const ok = (values: readonly string[]) =>
    fc.constantFrom(...values).map((v) => ({ text: `${name}=${enc(v)}`, effect: 'ok' as Effect }));
  const as = (effect: Effect, values: readonly string[], raw = false) =>
    fc.constantFrom(...values).map((v) => ({ text: `${name}=${raw ? v : enc(v)}`, effect }));
  const choices: fc.WeightedArbitrary<Param>[] = [
    { weight: 1, arbitrary: as('unknown', ['%zz', '%', '+', '%20'], true) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...NASTY).map(([v, effect]) => ({ text: `${name}=${v}`, effect })),
    },
    // Control characters other than NUL: any text a store can keep; a cursor made of them is not one a list gave.
    {
      weight: 1,
      arbitrary: as(name === 'cursor' ? 'cursor' : 'unknown', ['%01', '%0A', '%0D%0A', '%1F', '%7F'], true),
    },
  ];
  if (name === 'limit') {
    // `limit` is an integer in the OpenAPI document: `1e3` is that integer (1000) written as a
    // JSON number may be, and is read as 1000; `1.5` is no integer.
    choices.push({ weight: 4, arbitrary: ok(['1', '2', '10', '100', '1000', '0001', '1e3']) });
    choices.push({ weight: 2, arbitrary: as('limit', ['0', '1001', '9999', '0000']) });
    choices.push({ weight: 1, arbitrary: as('schema', ['', '-1', 'abc', '1.5', '10000']) });
  } else if (name === 'cursor') {
    const list = listOf(route.template);
    const given = world.cursors[list];
    if (given) choices.push({ weight: 4, arbitrary: ok([given]) });
    const others = Object.entries(world.cursors)
      .filter(([l]) => l !== list)
      .map(([, c]) => c);
    choices.push({
      weight: 4,
      arbitrary: as('cursor', [...Object.values(forgedCursors(list, given)), ...others]),
    });
    choices.push({ weight: 1, arbitrary: as('schema', ['', 'c'.repeat(513)]) });
  } else if (schema.enum) {
    choices.push({ weight: 4, arbitrary: ok(schema.enum.map(String)) });
    choices.push({ weight: 1, arbitrary: as('schema', ['RUNNING', 'nope', '']) });
  } else if (name === 'from' || name === 'to') {
    choices.push({
      weight: 4,
      arbitrary: ok([
        '2026-01-01T00:00:00Z',
        '2026-02-01T00:00:00.000Z',
        '2026-01-15',
        '2030-01-01T00:00:00Z',
      ]),
    });
    choices.push({ weight: 1, arbitrary: as('unknown', ['yesterday', '2026-13-40', '0', '-1', '']) });
  } else {
    const pool = world.ids[name];
    const ids = pool ? [...pool.own, ...pool.other, ...pool.shared] : [];
    if (ids.length > 0) choices.push({ weight: 4, arbitrary: ok(ids) });
    choices.push({
      weight: 2,
      arbitrary: fc.uuid().map((v) => ({ text: `${name}=${v}`, effect: 'ok' as Effect })),
    });
    // Text of any kind within the schema's bounds: the route filters by it or finds nothing.
    choices.push({
      weight: 2,
      arbitrary: fc
        .string({ minLength: schema.minLength ?? 0, maxLength: 20 })
        .filter((v) => !v.includes('\u0000') && v.toWellFormed() === v)
        .map((v) => ({ text: `${name}=${enc(v)}`, effect: 'unknown' as Effect })),
    });
  }
  return fc.oneof(...choices);
}

/** Parameters no route of the operator API takes, in the forms clients send them. */
function strayArb(route: FuzzRoute): fc.Arbitrary<Param> {
  const names = route.query.map((q) => q.name);
  const named = names.length > 0 ? names : ['reseller_id'];
  return fc.oneof(
    fc
      .constantFrom('bogus_filter=1', 'owner=acme', 'state=failed', 'constructor=1', 'x=1', 'a[b]=c', 'x[]=')
      .map((text) => ({ text, effect: 'schema' as Effect })),
    fc.constant<Param>({ text: '__proto__=1', effect: 'unknown' }),
    // PHP's array forms of a parameter the route takes, and one given twice.
    fc
      .tuple(fc.constantFrom(...named), fc.constantFrom('[]', '%5B%5D', '[0]'))
      .map(([n, suffix]) => ({ text: `${n}${suffix}=x`, effect: 'schema' as Effect })),
    fc.constantFrom(...named).map((n) => ({ text: `${n}=1&${n}=2`, effect: 'schema' as Effect })),
    fc
      .tuple(fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }), fc.string({ maxLength: 8 }))
      .filter(([k]) => !names.includes(k))
      .map(([k, v]) => ({
        text: `${encodeURIComponent(k.toWellFormed())}=${encodeURIComponent(v.toWellFormed())}`,
        effect: 'unknown' as Effect,
      })),
  );
}

/** The outcome a query decides alone, from what its parameters do (the checks' order: schema, limit, cursor). */
function outcomeOf(effects: readonly Effect[]): Outcome | undefined {
  if (effects.includes('schema')) return INVALID_QUERY;
  if (effects.includes('unknown')) return undefined;
  const limit = effects.includes('limit');
  const cursor = effects.includes('cursor');
  if (limit && cursor) return { status: 400, rule: 'a bad limit and a cursor no list gave are 400' };
  return limit ? INVALID_LIMIT : cursor ? INVALID_CURSOR : undefined;
}

/** Query strings for an operator route: its own parameters, valid and broken, and strays. */
export function operatorQueryArb(world: {
  ids: Readonly<Record<string, IdPool>>;
  cursors: Readonly<Record<string, string>>;
}): (route: FuzzRoute) => fc.Arbitrary<QueryPart> {
  return (route) => {
    const params = route.query.map((q) => {
      return fc.oneof(
        {
          weight: 3,
          arbitrary: fc.constant<Param>({ text: '', effect: q.required ? 'schema' : 'ok' }),
        },
        { weight: 4, arbitrary: valueArb(route, q.name, q.schema, world) },
      );
    });
    const stray = fc.oneof(
      { weight: 4, arbitrary: fc.constant<Param>({ text: '', effect: 'ok' }) },
      { weight: 1, arbitrary: strayArb(route) },
    );
    return fc.tuple(fc.tuple(...params), stray).map(([ps, s]) => {
      const all = [...ps, s];
      return {
        text: all
          .filter((p) => p.text !== '')
          .map((p) => p.text)
          .join('&'),
        valid: all.every((p) => p.effect === 'ok'),
        outcome: outcomeOf(all.map((p) => p.effect)),
      };
    });
  };
}

interface Listed {
  readonly items: readonly Record<string, unknown>[];
  readonly next_cursor: string | null;
}

/**
 * The operator API's world, on top of the reseller fuzz world of `setup` (acme's and globex's
 * services, backups and schedules): an operator and its token, the ids an operator sees (every
 * reseller's), and a cursor each list gave.
 */
export async function createOperatorFuzzWorld(t: TestApp, setup: FuzzSetup): Promise<OperatorFuzzWorld> {
  const operator = await createTestOperator(t, { name: 'fuzz-operator' });
  const token = await operatorToken(t, operator);
  const list = async (path: string): Promise<Listed> => {
    const res = await opsCall(t, token, 'GET', path);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as Listed;
  };
  const cursors: Record<string, string> = {};
  for (const name of ['resellers', 'services', 'jobs', 'hosts', 'audit']) {
    const page = await list(`${name}?limit=1`);
    if (page.next_cursor) cursors[name] = page.next_cursor;
  }
  const column = async (path: string, key: string) => (await list(path)).items.map((i) => String(i[key]));
  const shared = (ids: readonly string[]): IdPool => ({ own: [], other: [], shared: ids });
  const pool = (name: string) => {
    const p = setup.world.ids[name] ?? { own: [], other: [], shared: [] };
    return shared([...p.own, ...p.other, ...p.shared]);
  };
  const bearer = (s: string) => `Bearer ${s}`;
  const auth = (
    label: string,
    authorization: string | undefined,
    weight: number,
    scopes: string[] = [],
  ): FuzzAuth => ({
    label,
    authorization,
    weight,
    variant: 'B',
    tenant: undefined,
    scopes,
  });
  // A reseller's tokens are refused (403) whatever their scopes; the rest do not authenticate.
  const resellers = setup.world.auths
    .filter((a) => ['own-B', 'own-A', 'other-B', 'none', 'garbage', 'expired-own-B'].includes(a.label))
    .map((a) => ({ ...a, variant: 'B' as const, tenant: undefined, scopes: [], weight: 1 }));
  const ids: Record<string, IdPool> = {
    service_id: pool('service_id'),
    backup_id: pool('backup_id'),
    backup_schedule_id: pool('backup_schedule_id'),
    reseller_id: shared(await column('resellers', 'reseller_id')),
    job_id: shared(await column('jobs?limit=20', 'job_id')),
    host_id: shared(await column('hosts', 'host_id')),
  };
  const hints = setup.world.hints;
  return {
    auths: [
      auth('operator', bearer(token), 16, ['operator']),
      auth('operator-lower-case-scheme', `bearer ${token}`, 1, ['operator']),
      auth(
        'operator-tampered',
        bearer(`${token.slice(0, -4)}${token.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`),
        1,
      ),
      ...resellers,
    ],
    basics: [],
    ids,
    hints: {
      ...hints,
      name: ['fuzz-new', 'acme', 'globex', 'A b.c_d-e', '-bad', '', 'x'.repeat(101), 'caf\u00e9'],
      ...Object.fromEntries(
        ['services', 'cpu', 'ram', 'hdd', 'ip', 'backup'].map((k) => [k, [0, 1, 10, null, 999_999_999]]),
      ),
      CPU: [1, 2, 4],
      RAM: [1, 2, 8],
      HDD: [20, 40, 160],
      IP: [1, 2],
      BACKUP: [0, 10, 20],
    },
    secrets: { own: [], other: [] },
    envelope: 'B',
    queryArb: operatorQueryArb({ ids, cursors }),
    unknownPrefixes: [
      OPS,
      `${OPS}/services`,
      `${OPS}/jobs/${ids['job_id']?.shared[0] ?? 'x'}`,
      `${OPS}/resellers`,
    ],
    cursors,
    liveToken: token,
  };
}
