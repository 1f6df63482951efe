/**
 * Runs a fuzz property: sends each generated request, checks the answer, and either stops at
 * the first failure (fast-check shrinks it and prints the request, the answer and the seed) or,
 * with `collect`, goes on to the end and reports every distinct failure, grouped.
 *
 * Settings (environment): VRP_FUZZ_SEED (default fixed, so runs repeat), VRP_FUZZ_SCALE
 * (multiplies the number of requests), VRP_FUZZ_COLLECT=1.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  answerCode,
  checkResponse,
  describeResponse,
  type FuzzResponse,
  type Problem,
} from './fuzz-checks.ts';
import type { FuzzRequest } from './fuzz-requests.ts';

export interface FuzzSettings {
  readonly seed: number;
  readonly numRuns: number;
  readonly collect: boolean;
}

/** The settings from the environment: `runs` requests, times VRP_FUZZ_SCALE. */
export function fuzzSettings(runs: number): FuzzSettings {
  const env = process.env;
  return {
    seed: Number(env['VRP_FUZZ_SEED'] ?? 20_261_123),
    numRuns: Math.max(1, Math.round(runs * Number(env['VRP_FUZZ_SCALE'] ?? 1))),
    collect: env['VRP_FUZZ_COLLECT'] === '1',
  };
}

function describeExchange(req: FuzzRequest, res: FuzzResponse | undefined, problems: readonly Problem[]) {
  return [
    ...problems.map((p) => `${p.check}: ${p.detail}`),
    '--- request',
    // Requests print themselves (fc.toStringMethod), cut short and with escapes visible.
    fc.stringify(req),
    '--- response',
    res ? describeResponse(res) : '(none)',
  ].join('\n');
}

interface Group {
  count: number;
  /** Routes it was met on, with counts. */
  readonly routes: Map<string, number>;
  /** What was fuzzed in the requests that met it, with counts: the likely cause stands out. */
  readonly tags: Map<string, number>;
  readonly examples: string[];
}

/** Rules of a surface beyond fuzz-checks.ts's (the operator document, the console's pages). */
export type ExtraCheck<R extends FuzzRequest> = (req: R, res: FuzzResponse) => Problem[];

/** Sends `req` (and its twin) and lists every rule the answer breaks. */
async function exchange<R extends FuzzRequest>(
  req: R,
  send: (req: R) => Promise<FuzzResponse>,
  extra: ExtraCheck<R> | undefined,
): Promise<{ res: FuzzResponse | undefined; problems: Problem[] }> {
  let res: FuzzResponse | undefined;
  try {
    res = await send(req);
    const twin = req.twin ? await send(req.twin as R) : undefined;
    return { res, problems: [...checkResponse(req, res, twin), ...(extra?.(req, res) ?? [])] };
  } catch (err) {
    return { res, problems: [{ check: 'no-answer', detail: String(err) }] };
  }
}

/**
 * Sends each of a corpus of known requests (cases outside testing found, each with the answer it
 * must get in `expect`), in order, through the same checks as the random ones; fails listing
 * every case that broke a rule. Deterministic: it runs whatever the seed and the scale.
 */
export async function runCorpus<R extends FuzzRequest>(
  name: string,
  cases: readonly R[],
  send: (req: R) => Promise<FuzzResponse>,
  extra?: ExtraCheck<R>,
): Promise<void> {
  const failures: string[] = [];
  for (const req of cases) {
    const { res, problems } = await exchange(req, send, extra);
    if (problems.length > 0) failures.push(describeExchange(req, res, problems));
  }
  if (failures.length > 0)
    assert.fail(
      `${name}: ${failures.length} of ${cases.length} known cases failed\n${failures.join('\n- - -\n')}`,
    );
}

/**
 * Sends `numRuns` requests from `requests` through `send` and holds each answer to
 * fuzz-checks.ts (and `extra`); fails (after all of them, with `collect`) if any answer breaks a rule.
 */
export async function runFuzz<R extends FuzzRequest>(
  name: string,
  requests: fc.Arbitrary<R>,
  send: (req: R) => Promise<FuzzResponse>,
  settings: FuzzSettings,
  extra?: ExtraCheck<R>,
): Promise<void> {
  const groups = new Map<string, Group>();
  const property = fc.asyncProperty(requests, async (req) => {
    const { res, problems } = await exchange(req, send, extra);
    if (problems.length === 0) return;
    const text = describeExchange(req, res, problems);
    if (!settings.collect) throw new Error(text);
    for (const p of problems) {
      // One group per broken rule, status and answer code: usually one defect, met on several routes.
      const key = `${p.check} | HTTP ${res?.status ?? '-'} ${res ? answerCode(res) : ''}`;
      const g = groups.get(key) ?? {
        count: 0,
        routes: new Map<string, number>(),
        tags: new Map<string, number>(),
        examples: [],
      };
      g.count++;
      const seen = g.routes.get(req.expect.route) ?? 0;
      g.routes.set(req.expect.route, seen + 1);
      for (const tag of req.expect.tags) g.tags.set(tag, (g.tags.get(tag) ?? 0) + 1);
      if (seen === 0 && g.examples.length < 3) g.examples.push(text);
      groups.set(key, g);
    }
  });
  const replay = `replay with VRP_FUZZ_SEED=${settings.seed}; VRP_FUZZ_COLLECT=1 lists every failure`;
  try {
    await fc.assert(property, {
      seed: settings.seed,
      numRuns: settings.numRuns,
      // The report then holds the request and the answer, not only the generated value.
      includeErrorInReport: true,
      // Shrinking re-sends requests; two minutes of it are plenty for a readable counterexample.
      plugins: [fc.interruptAfterTimeLimit(120_000)],
    });
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}\n${replay}`, { cause: err });
  }
  if (groups.size === 0) return;
  const sorted = [...groups.entries()].sort(([a], [b]) => a.localeCompare(b));
  const report = sorted
    .map(([key, g]) => {
      const routes = [...g.routes].map(([r, n]) => `  ${String(n).padStart(4)}x ${r}`).join('\n');
      const tags = [...g.tags]
        .sort(([, a], [, b]) => b - a)
        .slice(0, 12)
        .map(([t, n]) => `${t} ${n}`)
        .join(', ');
      return `=== ${key} (${g.count}x)\n${routes}\n  most common: ${tags}\n${g.examples.join('\n- - -\n')}`;
    })
    .join('\n\n');
  const summary = sorted
    .map(([key, g]) => `  ${String(g.count).padStart(4)}x ${key} (${g.routes.size} routes)`)
    .join('\n');
  console.log(`\n${name}: every failure, grouped\n${report}\n\nsummary:\n${summary}\n`);
  assert.fail(`${name}: ${groups.size} distinct failures (${replay})\n${summary}`);
}
