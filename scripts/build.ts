/**
 * `npm run build`: the server as plain JavaScript in `dist/`, which every launcher runs (`npm
 * start`, the systemd units of deploy/, the container image).
 *
 * Why: node runs a `.ts` file by stripping its types as it loads it, with a WebAssembly compiler
 * it loads at the first such file and keeps for the life of the process. A server started from
 * JavaScript never loads it: about 25 MB less resident memory per process (bench/FINDINGS.md,
 * "The server runs from JavaScript").
 *
 * How: each `src/**` `.ts` file goes through node's own stripper (node:module
 * `stripTypeScriptTypes`), the transform node applies on load, done once ahead of time. It puts
 * blanks where the types were, so every line and column stays where it is in the source and a
 * stack trace names the source's lines. Relative imports of `./x.ts` become `./x.js`, the same
 * length. Every other file under src/ (the consoles' assets) is copied as it is.
 *
 * A file is written only when its content changed, aside and then renamed over the old one, and
 * the files of dist/ that src/ no longer has are removed: a server running from dist/ meanwhile
 * (a lazy import) reads a whole file, old or new, never half of one. `dist/.source` records a
 * digest of what src/ held (sourceDigest, src/source-digest.ts): a server started from dist/
 * refuses to run code older than src/ (main.ts).
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { BUILD_DIGEST_FILE, filesUnder, sourceDigest } from '../src/source-digest.ts';

/** A relative import's specifier ending in `.ts`: static (`from`, bare `import`) or dynamic with a literal. */
const RELATIVE_TS_IMPORT = /(\bfrom\s*|\bimport\s*\(?\s*)(['"])(\.{1,2}\/[^'"\n]*?)\.ts\2/g;
/** A dynamic import of anything but a string literal: its specifier could not be rewritten. */
const COMPUTED_IMPORT = /\bimport\s*\(\s*[^'"\s)]/;

/** The JavaScript of one TypeScript module: types blanked out, relative `.ts` imports made `.js`. */
export function toJavaScript(source: string, name: string): string {
  const js = stripTypeScriptTypes(source).replace(RELATIVE_TS_IMPORT, '$1$2$3.js$2');
  if (COMPUTED_IMPORT.test(js)) throw new Error(`${name}: import() of a computed specifier cannot be built`);
  return js;
}

/** Writes `content` to `path` unless it holds it already; aside, then renamed over it. */
function writeIfChanged(path: string, content: Buffer | string): boolean {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  try {
    if (readFileSync(path).equals(bytes)) return false;
  } catch {
    // not there yet
  }
  mkdirSync(dirname(path), { recursive: true });
  const aside = `${path}.${process.pid}.tmp`;
  writeFileSync(aside, bytes);
  renameSync(aside, path);
  return true;
}

/** Builds `src` into `out`; returns the number of files written and removed. */
export function build(src: string, out: string): { written: number; removed: number } {
  const wanted = new Set<string>();
  let written = 0;
  for (const file of filesUnder(src)) {
    const source = readFileSync(join(src, file));
    const target = file.endsWith('.ts') ? `${file.slice(0, -3)}.js` : file;
    wanted.add(target);
    const content = file.endsWith('.ts') ? toJavaScript(source.toString('utf8'), file) : source;
    if (writeIfChanged(join(out, target), content)) written++;
  }
  wanted.add(BUILD_DIGEST_FILE);
  let removed = 0;
  for (const file of filesUnder(out))
    if (!wanted.has(file)) {
      rmSync(join(out, file), { force: true });
      removed++;
    }
  writeIfChanged(join(out, BUILD_DIGEST_FILE), `${sourceDigest(src)}\n`);
  return { written, removed };
}

if (import.meta.main) {
  // stripTypeScriptTypes warns that it is experimental on its first call; that is known here.
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (w.name !== 'ExperimentalWarning') console.warn(w);
  });
  const root = resolve(import.meta.dirname, '..');
  const { written, removed } = build(join(root, 'src'), join(root, 'dist'));
  console.log(`build: dist/ from src/ (${written} files written, ${removed} removed)`);
}
