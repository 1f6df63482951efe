import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ExpectedFailure } from './expected-failure.ts';

/** The file of dist/ (scripts/build.ts) that records the digest of the src/ it was built from. */
export const BUILD_DIGEST_FILE = '.source';

/** Every file under `dir`, as paths relative to it. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

/** A digest of every file under `dir`: their paths and contents, in path order. */
export function sourceDigest(dir: string): string {
  const hash = createHash('sha256');
  for (const file of filesUnder(dir).sort()) {
    const content = readFileSync(join(dir, file));
    hash.update(`${file}\0${content.length}\0`).update(content);
  }
  return hash.digest('hex');
}

/** The digest of the source the build in `dir` was made from, as it recorded it; undefined if none. */
export function recordedDigest(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, BUILD_DIGEST_FILE), 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * Refuses to run a build older than its source: `moduleUrl` (main's) in a `dist/` beside a `src/`
 * whose digest is not the one the build recorded (code changed and not built again). Run from
 * src/ itself, or from a dist/ with no src/ beside it, there is nothing to compare.
 */
export function checkBuildIsCurrent(moduleUrl: string): void {
  const dir = dirname(fileURLToPath(moduleUrl));
  const src = join(dir, '..', 'src');
  if (basename(dir) !== 'dist' || !existsSync(src)) return;
  if (recordedDigest(dir) !== sourceDigest(src))
    throw new ExpectedFailure(
      `${dir} was not built from the code in ${src} (changed since): run \`npm run build\` there, then start again`,
    );
}
