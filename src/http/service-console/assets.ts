import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** A file the console page loads: its bytes and media type. */
export interface ConsoleAsset {
  readonly body: Buffer;
  readonly type: string;
}

/** Every file the page loads, by its name under the assets' path, and their version. */
export interface ConsoleAssets {
  readonly files: ReadonlyMap<string, ConsoleAsset>;
  /**
   * A hash of all of them, in their path: a file's address changes whenever any file does, so
   * the browser may keep each one for a year.
   */
  readonly version: string;
}

const packageFile = (specifier: string, relative: string) =>
  fileURLToPath(new URL(relative, import.meta.resolve(specifier)));

/** Our own files, and xterm.js's (its ES module builds, which import nothing). */
const FILES: readonly (readonly [name: string, path: string, type: string])[] = [
  ['service-console.js', fileURLToPath(new URL('./assets/service-console.js', import.meta.url)), JS],
  ['service-console.css', fileURLToPath(new URL('./assets/service-console.css', import.meta.url)), CSS],
  ['xterm.mjs', packageFile('@xterm/xterm', './xterm.mjs'), JS],
  ['xterm.css', packageFile('@xterm/xterm', '../css/xterm.css'), CSS],
  ['addon-fit.mjs', packageFile('@xterm/addon-fit', './addon-fit.mjs'), JS],
];

/** noVNC's ES modules: its `core/` (rfb.js and what it imports) and the `vendor/` code it imports. */
const NOVNC_ROOT = packageFile('@novnc/novnc', '../');
const NOVNC_DIRS = ['core', 'vendor'];

async function novncFiles(): Promise<[string, string][]> {
  const found: [string, string][] = [];
  for (const dir of NOVNC_DIRS) {
    const names = await readdir(`${NOVNC_ROOT}${dir}`, { recursive: true });
    for (const name of names.sort()) {
      if (name.endsWith('.js')) found.push([`novnc/${dir}/${name}`, `${NOVNC_ROOT}${dir}/${name}`]);
    }
  }
  return found;
}

async function load(): Promise<ConsoleAssets> {
  const files = new Map<string, ConsoleAsset>();
  const hash = createHash('sha256');
  const list = [...FILES, ...(await novncFiles()).map(([name, path]) => [name, path, JS] as const)];
  for (const [name, path, type] of list) {
    const body = await readFile(path);
    files.set(name, { body, type });
    hash.update(name).update('\0').update(body);
  }
  return { files, version: hash.digest('base64url').slice(0, 16) };
}

let loaded: Promise<ConsoleAssets> | undefined;

/** The page's files, read once per process on first use (they never change while it runs). */
export function consoleAssets(): Promise<ConsoleAssets> {
  loaded ??= load();
  loaded.catch(() => {
    loaded = undefined;
  });
  return loaded;
}
