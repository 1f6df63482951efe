/**
 * What a group file (scripts/test-groups.ts) runs: each test file as a suite of its own, named
 * after the file, its tests and top-level hooks inside it, one file after another.
 */
import { describe } from 'node:test';

/** `entries`: [name shown in the report, file URL to import]. */
export function describeFiles(entries: readonly (readonly [string, string])[]): void {
  for (const [name, url] of entries) {
    describe(name, async () => {
      await import(url);
    });
  }
}
