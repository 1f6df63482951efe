import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from './config.ts';
import { systemCause } from './expected-failure.ts';

/**
 * Makes VRP_DATA_DIR (and its missing parents, mode 0700) unless it is there. A path that
 * cannot be one (a file, a read-only or pseudo file system, no permission) is a ConfigError
 * naming the setting. Not `mkdirSync(..., { recursive: true })`: under /proc it never returns.
 */
export function ensureDataDir(dataDir: string): void {
  try {
    makeDir(dataDir);
  } catch (err) {
    const cause = systemCause(err);
    if (cause === undefined) throw err;
    throw new ConfigError(`VRP_DATA_DIR (${dataDir}) cannot be used: ${cause}`, { cause: err });
  }
}

function makeDir(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if (isDirAlready(err, dir)) return;
    const parent = dirname(dir);
    if (errorCode(err) !== 'ENOENT' || parent === dir) throw err;
    makeDir(parent);
    // Another process starting at the same moment may have made it since: theirs is as good.
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (again) {
      if (!isDirAlready(again, dir)) throw again;
    }
  }
}

const errorCode = (err: unknown) => (err instanceof Error && 'code' in err ? err.code : undefined);

/** The directory exists: made before, or by another process in the meantime (a file of its name is no use). */
const isDirAlready = (err: unknown, dir: string) =>
  errorCode(err) === 'EEXIST' && statSync(dir).isDirectory();
