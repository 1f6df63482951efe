/**
 * What each test file cost in the last run that ran it (wall time, and CPU time with that of the
 * processes it started), kept in `.tmp/test-times.json` (not in the repository: it is this
 * machine's), so that the next run orders its queue (scripts/test-lanes.ts) well:
 *
 * - Longest first: a long file taken last leaves the other lanes idle while it runs, and the run
 *   ends when it ends. Longest first, the last files taken are short ones and the lanes end
 *   together (Jest orders its files by their last duration too).
 * - Files that mostly wait (for a server process to start, a browser page, a timer) alternate
 *   with files that keep a core busy: there are more lanes than cores (scripts/test.ts), and
 *   three waiting files at once leave the cores idle, three busy ones make all three wait for CPU.
 *   Measured on the 2-core machine, 3 lanes: 46.5-47.5 s longest first, 44.5 s alternating.
 *
 * A file the record does not know (new, or the first run on a machine) goes first: it may be
 * long. Without a record the order is the files' own (by path).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** What a file cost, in seconds: wall time, and CPU time (its lane's and its processes'). */
export interface Cost {
  readonly wall: number;
  readonly cpu: number;
}

/** File (as the run names it, relative to the project) -> its cost in the last run. */
export type Costs = Record<string, Cost>;

/** A file that used less CPU than half its wall time mostly waited. */
const WAITING = 0.5;

const isCost = (v: unknown): v is Cost =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as Cost).wall === 'number' &&
  typeof (v as Cost).cpu === 'number' &&
  (v as Cost).wall >= 0 &&
  (v as Cost).cpu >= 0;

export function readCosts(path: string): Costs {
  if (!existsSync(path)) return {};
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, Cost] => isCost(e[1])));
  } catch {
    // A record cut short or edited by hand only loses the ordering, never the run.
    return {};
  }
}

/**
 * `files` in the order to run them: the unknown ones first (in their own order); then the known,
 * waiting and busy ones alternating, each kind longest first.
 */
export function runOrder(files: readonly string[], costs: Costs): string[] {
  const unknown = files.filter((f) => costs[f] === undefined);
  const longestFirst = (a: string, b: string) => costs[b]!.wall - costs[a]!.wall || (a < b ? -1 : 1);
  const waits = (f: string) => costs[f]!.cpu < WAITING * costs[f]!.wall;
  const known = files.filter((f) => costs[f] !== undefined).sort(longestFirst);
  const waiting = known.filter(waits);
  const busy = known.filter((f) => !waits(f));
  const alternating: string[] = [];
  for (let i = 0; i < Math.max(waiting.length, busy.length); i++) {
    if (i < waiting.length) alternating.push(waiting[i]!);
    if (i < busy.length) alternating.push(busy[i]!);
  }
  return [...unknown, ...alternating];
}

/**
 * The costs of the lines of a times file (scripts/test-lane.ts: wall, CPU, the CPU of the
 * processes it started, then the file's name), merged over `earlier`: a file this run ran gets
 * its new cost.
 */
export function mergeTimes(earlier: Costs, times: string): Costs {
  const merged = { ...earlier };
  for (const line of times.split('\n')) {
    // The processes' CPU can come out below zero: one that left the lane's tree meanwhile.
    const m = /^\s*([\d.]+)\s+([\d.]+)\s+(-?[\d.]+)\s+(\S.*)$/.exec(line);
    if (!m) continue;
    const cpu = Number(m[2]) + Math.max(0, Number(m[3]));
    merged[m[4]!] = { wall: Number(m[1]), cpu: Math.round(cpu * 100) / 100 };
  }
  return merged;
}

export function writeCosts(path: string, costs: Costs): void {
  mkdirSync(dirname(path), { recursive: true });
  const sorted = Object.fromEntries(Object.entries(costs).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  writeFileSync(path, `${JSON.stringify(sorted, null, 2)}\n`);
}
