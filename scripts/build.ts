/**
 * `npm run build`: the server as one bundle of JavaScript in `dist/`, which every launcher runs
 * (`npm start`, the systemd units of deploy/, the container image): `dist/main.js`, the chunks it
 * imports, and the consoles' assets in `dist/assets/`.
 *
 * Why JavaScript: node runs a `.ts` file by stripping its types as it loads it, with a WebAssembly
 * compiler it loads at the first such file and keeps for the life of the process. A server
 * started from JavaScript never loads it: about 25 MB less resident memory per process
 * (bench/FINDINGS.md, "The server runs from JavaScript").
 *
 * Why one bundle: run as modules, the server loads about 1,400 of them (its own and its
 * packages'), and V8 keeps a record, a compiled top level and the bindings of each, whatever its
 * size. As one bundle it holds about 20 MB less at rest and 1-11 MB less at the peak of the
 * status load, its CPU per request within the machine's spread (bench/FINDINGS.md, "The server
 * as one bundle").
 *
 * How: esbuild bundles `src/main.ts` and what it imports, packages included, as ES modules for
 * Node 24. Each `src/**` `.ts` file first goes through node's own stripper (node:module
 * `stripTypeScriptTypes`, the transform node applies when the tests run the source), so the code
 * bundled is the code tested, and the stripper keeps every line and column where they are in the
 * source, so the source map written beside each output file names the source's lines. A dynamic
 * `import()` stays a separate chunk, loaded when the code first runs it (the S3 and SFTP backup
 * stores). The packages in EXTERNAL stay in node_modules as they are: loaded only by the settings
 * that use them, or native. Every file under an `assets/` directory of src/ is copied to
 * `dist/assets/`, where the modules that read it (`new URL('./assets/…', import.meta.url)`) find
 * it, since every output file of the bundle sits at the top of dist/.
 *
 * A file is written only when its content changed, aside and then renamed over the old one. The
 * chunks' names hold a hash of their content, so a changed chunk is a new file. The files of the
 * build before stay one build more (`dist/.files` and `.files-before` list them): a server still
 * running from it, between an upgrade's build and its restart, loads its own lazy chunks (the
 * stores'), whole. Older files are removed. `dist/.source`
 * records a digest of what src/ held (sourceDigest, src/source-digest.ts): a server started from
 * dist/ refuses to run code older than src/ (main.ts).
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { build as bundle, type Plugin } from 'esbuild';
import { BUILD_DIGEST_FILE, filesUnder, recordedDigest, sourceDigest } from '../src/source-digest.ts';

/**
 * The packages left out of the bundle, imported from node_modules when the server first uses
 * them: the backup stores' (AWS SDK, SFTP), the mail sender's, the two-factor enrolment's QR code
 * maker, ssh2 (with its native parts), swagger-ui-dist (which finds its files by its own
 * directory, `__dirname`, which a bundle's modules do not have), and the native add-ons that pg
 * and ws load when present.
 */
export const EXTERNAL = [
  '@aws-sdk/*',
  'ssh2',
  'ssh2-sftp-client',
  'nodemailer',
  'qrcode',
  'swagger-ui-dist',
  'pg-native',
  'bufferutil',
  'utf-8-validate',
] as const;

/**
 * At the top of every output file: a `require` for the CommonJS packages bundled into an ES
 * module (esbuild's `require` calls go to it), resolved from dist/ as theirs were from their own
 * directory, since no bundled package requires a file by a relative path at run time.
 */
const BANNER =
  "import { createRequire as __vrpCreateRequire } from 'node:module';\nconst require = __vrpCreateRequire(import.meta.url);";

/** A dynamic import of anything but a string literal: the bundle could not hold what it names. */
const COMPUTED_IMPORT = /\bimport\s*\(\s*[^'"\s)]/;

/** The JavaScript of one TypeScript module: node's own stripping, every position kept. */
export function toJavaScript(source: string, name: string): string {
  const js = stripTypeScriptTypes(source);
  if (COMPUTED_IMPORT.test(js)) throw new Error(`${name}: import() of a computed specifier cannot be built`);
  return js;
}

/** Loads the project's `.ts` files through toJavaScript; esbuild bundles what comes out. */
function nodeStripping(src: string): Plugin {
  return {
    name: 'node-type-stripping',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!args.path.startsWith(src + sep)) return undefined;
        const name = relative(src, args.path);
        return { contents: toJavaScript(readFileSync(args.path, 'utf8'), name), loader: 'js' };
      });
    },
  };
}

/**
 * The files of dist/ that list, one per line, the files the last build made and those of the
 * build before it from another source (a build from the same source leaves both as they were).
 */
const MADE_RECORD = '.files';
const BEFORE_RECORD = '.files-before';

/** The files a record of `out` lists (none when there is none). */
function recorded(out: string, record: string): string[] {
  try {
    return readFileSync(join(out, record), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** `files` as a record's content: sorted, one per line. */
const recordOf = (files: Iterable<string>) =>
  [...files]
    .sort()
    .map((f) => `${f}\n`)
    .join('');

/** Writes `content` to `path` unless it holds it already; aside, then renamed over it. */
function writeIfChanged(path: string, content: Uint8Array | string): boolean {
  const bytes = Buffer.from(content);
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

/** The files of `src` the bundle does not hold: each asset by its place in dist/assets/. */
function assetsOf(src: string): Map<string, string> {
  const assets = new Map<string, string>();
  for (const file of filesUnder(src)) {
    if (file.endsWith('.ts')) continue;
    if (basename(dirname(file)) !== 'assets')
      throw new Error(`src/${file}: not a module and not under an assets/ directory, so not in the build`);
    const target = join('assets', basename(file));
    const other = assets.get(target);
    if (other) throw new Error(`src/${file} and src/${other} would both be dist/${target}`);
    assets.set(target, file);
  }
  return assets;
}

/** Removes the directories under `dir` that hold no file (an older build's). */
function removeEmptyDirectories(dir: string): void {
  const dirs = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => join(e.parentPath, e.name))
    .sort((a, b) => b.length - a.length);
  for (const d of dirs) if (readdirSync(d).length === 0) rmdirSync(d);
}

/** Builds `src` (its `main.ts`) into `out`; returns the number of files written and removed. */
export async function build(src: string, out: string): Promise<{ written: number; removed: number }> {
  const root = resolve(src);
  const assets = assetsOf(root);
  const result = await bundle({
    entryPoints: [join(root, 'main.ts')],
    outdir: resolve(out),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    external: [...EXTERNAL],
    // No keepNames: esbuild keeps every name but where two would clash in one output file, and
    // there adds a digit (pg's DatabaseError2; the project's classes keep theirs, as the build's
    // test checks). Keeping those few cost 17 MB at rest: the `__name` call it wraps around every
    // function and class gives each its own property (bench/FINDINGS.md, "The server as one bundle").
    //
    // Source maps: written beside each file, for reading a trace offline (`node --enable-source-maps` reads
    // them at a cost of 55-75 MB, bench/FINDINGS.md); the source is in src/, not in the map.
    sourcemap: 'linked',
    sourcesContent: false,
    banner: { js: BANNER },
    plugins: [nodeStripping(root)],
    write: false,
    logLevel: 'silent',
  });
  // esbuild throws on an error; a warning (code it would bundle as written but doubts) fails too.
  if (result.warnings.length > 0)
    throw new Error(
      result.warnings
        .map((w) => `${w.location?.file ?? ''}:${w.location?.line ?? ''}: WARNING: ${w.text}`)
        .join('\n'),
    );

  const made = new Set<string>();
  let written = 0;
  for (const file of result.outputFiles) {
    const target = relative(resolve(out), file.path);
    made.add(target);
    if (writeIfChanged(join(out, target), file.contents)) written++;
  }
  for (const [target, file] of assets) {
    made.add(target);
    if (writeIfChanged(join(out, target), readFileSync(join(root, file)))) written++;
  }
  const lastMade = recorded(out, MADE_RECORD);
  // Built again from the same source: the build before is still the one it had.
  const digest = sourceDigest(root);
  const before = recordedDigest(out) === digest ? recorded(out, BEFORE_RECORD) : lastMade;
  const wanted = new Set([...made, ...before, BUILD_DIGEST_FILE, MADE_RECORD, BEFORE_RECORD]);
  let removed = 0;
  for (const file of filesUnder(out))
    if (!wanted.has(file)) {
      rmSync(join(out, file), { force: true });
      removed++;
    }
  removeEmptyDirectories(out);
  writeIfChanged(join(out, BEFORE_RECORD), recordOf(before));
  writeIfChanged(join(out, MADE_RECORD), recordOf(made));
  writeIfChanged(join(out, BUILD_DIGEST_FILE), `${digest}\n`);
  return { written, removed };
}

if (import.meta.main) {
  // stripTypeScriptTypes warns that it is experimental on its first call; that is known here.
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (w.name !== 'ExperimentalWarning') console.warn(w);
  });
  const root = resolve(import.meta.dirname, '..');
  const { written, removed } = await build(join(root, 'src'), join(root, 'dist'));
  console.log(`build: dist/ from src/, one bundle (${written} files written, ${removed} removed)`);
}
