/**
 * How long each test file took in the last run that ran it, kept in `.tmp/test-durations.json`
 * (not in the repository: it is this machine's), so that the next run starts the slowest files
 * first. The lanes (scripts/test-lanes.ts) take files from one queue; a long file taken last
 * leaves the other lanes idle while it runs, and the run ends when it ends. Longest first, the
 * last files taken are short ones and the lanes end together. Jest orders its files the same way.
 *
 * A file the record does not know (new, or the first run on a machine) goes first: it may be
 * long. Without a record the order is the files' own (by path).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** File (as the run names it, relative to the project) -> wall seconds. */
export type Durations = Record<string, number>;

export function readDurations(path: string): Durations {
  if (!existsSync(path)) return {};
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((e): e is [string, number] => typeof e[1] === 'number' && e[1] >= 0),
    );
  } catch {
    // A record cut short or edited by hand only loses the ordering, never the run.
    return {};
  }
}

/** `files` with the unknown ones first (in their own order), then the known, longest first. */
export function longestFirst(files: readonly string[], durations: Durations): string[] {
  const unknown = files.filter((f) => durations[f] === undefined);
  const known = files.filter((f) => durations[f] !== undefined);
  known.sort((a, b) => durations[b]! - durations[a]! || (a < b ? -1 : 1));
  return [...unknown, ...known];
}

/**
 * The durations of the lines of a times file (scripts/test-lane.ts: wall, CPU, children's CPU,
 * then the file's name), merged over `earlier`: a file this run ran gets its new time.
 */
export function mergeTimes(earlier: Durations, times: string): Durations {
  const merged = { ...earlier };
  for (const line of times.split('\n')) {
    const m = /^\s*([\d.]+)\s+[\d.]+\s+[\d.]+\s+(\S.*)$/.exec(line);
    if (m) merged[m[2]!] = Number(m[1]);
  }
  return merged;
}

export function writeDurations(path: string, durations: Durations): void {
  mkdirSync(dirname(path), { recursive: true });
  const sorted = Object.fromEntries(Object.entries(durations).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  writeFileSync(path, `${JSON.stringify(sorted, null, 2)}\n`);
}
