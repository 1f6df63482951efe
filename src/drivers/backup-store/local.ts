import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { messageOf } from '../../domain/errors.ts';
import { systemCause } from '../../expected-failure.ts';
import { type BackupStore, checkKey, storeFailure } from './store.ts';

/**
 * `local:/path`: a directory of the machine the worker runs on. An object is written to a
 * private part file beside it, flushed, and renamed into place, so a crash leaves no torn object.
 */
export function localBackupStore(root: string): BackupStore {
  const path = (key: string) => join(root, ...checkKey(key).split('/'));
  const isBelow = (dir: string) => {
    const rel = relative(root, dir);
    return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
  };
  const fail = (what: string, err: unknown): never => {
    const cause = systemCause(err) ?? messageOf(err);
    const missing = err instanceof Error && 'code' in err && err.code === 'ENOENT';
    throw storeFailure(`local:${root}`, what, cause, missing, err);
  };
  return {
    description: `local:${root}`,

    async put(key, data) {
      const file = path(key);
      const part = `${file}.part-${randomBytes(6).toString('hex')}`;
      try {
        await mkdir(dirname(file), { recursive: true, mode: 0o700 });
        const out = createWriteStream(part, { mode: 0o600, flush: true });
        await pipeline(data, out);
        await rename(part, file);
        return out.bytesWritten;
      } catch (err) {
        await rm(part, { force: true });
        return fail(`cannot write ${key}`, err);
      }
    },

    async get(key, range) {
      const file = path(key);
      try {
        await stat(file);
      } catch (err) {
        return fail(`cannot read ${key}`, err);
      }
      return createReadStream(file, range ? { start: range.start, end: range.end } : {});
    },

    async size(key) {
      try {
        return (await stat(path(key))).size;
      } catch (err) {
        if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return undefined;
        return fail(`cannot read ${key}`, err);
      }
    },

    async list(prefix, options) {
      const start = join(root, ...checkKey(prefix.replace(/\/+$/, '')).split('/'));
      const out: string[] = [];
      const walk = async (dir: string): Promise<void> => {
        let entries: import('node:fs').Dirent[];
        try {
          entries = await readdir(dir, { withFileTypes: true });
        } catch (err) {
          if (err instanceof Error && 'code' in err && (err.code === 'ENOENT' || err.code === 'ENOTDIR'))
            return;
          fail(`cannot list ${prefix}`, err);
          return;
        }
        for (const e of entries) {
          const full = join(dir, e.name);
          if (e.isDirectory()) await walk(full);
          else if (options?.parts || !e.name.includes('.part-'))
            out.push(relative(root, full).split(sep).join('/'));
        }
      };
      await walk(start);
      return out;
    },

    async delete(key) {
      const file = path(key);
      try {
        await unlink(file);
      } catch (err) {
        if (!(err instanceof Error && 'code' in err && err.code === 'ENOENT'))
          fail(`cannot delete ${key}`, err);
      }
      // The directories the object leaves empty go too (its backup's, then its service's), up to
      // the root: a deleted backup or a terminated service leaves nothing behind. The first one
      // that is not empty ends it (the ones above hold it).
      for (let dir = dirname(file); isBelow(dir); dir = dirname(dir)) {
        try {
          await rmdir(dir);
        } catch (err) {
          if (!(err instanceof Error && 'code' in err && err.code === 'ENOENT')) break;
        }
      }
    },

    async probe() {
      const file = join(root, `.probe-${randomBytes(6).toString('hex')}`);
      try {
        await mkdir(root, { recursive: true, mode: 0o700 });
        await writeFile(file, 'vrp');
        await unlink(file);
      } catch (err) {
        fail('cannot write', err);
      }
    },

    async close() {},
  };
}
