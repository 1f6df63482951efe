/**
 * Test files run in a few processes, not one process each. Starting a Node process that loads
 * Fastify, Kysely, pino and strips the types of our sources costs about 1.3 s of CPU; once per
 * file that was a third of the suite's CPU. Each group is one file for Node's test runner (so
 * its results reach the runner's reporter as usual), and inside it each test file is a suite
 * named after the file: its top-level hooks (`after` removing a data dir) stay its own, and the
 * report is grouped by file as before.
 *
 * A group runs its files one after another, so a test never shares its process with a test of
 * another file running at the same time (mocked timers, the CLI's captured stdout are safe).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The group files for `files` (paths relative to the project), in a new directory; `remove` deletes it. */
export function writeGroups(files: readonly string[], groups: number): { paths: string[]; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-test-groups-'));
  const lists: string[][] = Array.from({ length: Math.min(groups, files.length) }, () => []);
  // Dealt like cards, in path order: neighbours (the e2e files, the slow ones of a folder) land
  // in different groups.
  for (const [i, f] of files.entries()) lists[i % lists.length]!.push(f);
  const describeFiles = pathToFileURL(resolve('scripts/test-group.ts')).href;
  const paths = lists.map((list, i) => {
    const path = join(dir, `group-${i + 1}.mjs`);
    const entries = list.map((f) => [relative('.', f), pathToFileURL(resolve(f)).href]);
    writeFileSync(
      path,
      `import { describeFiles } from ${JSON.stringify(describeFiles)};\ndescribeFiles(${JSON.stringify(entries)});\n`,
    );
    return path;
  });
  return { paths, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
