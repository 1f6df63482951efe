/**
 * `node scripts/source-trace.ts [FILE]`: a stack trace of the built server (or a log holding
 * one) with each place in the bundle (`dist/app-….js:41053:12`) given as the place in the source
 * (`src/http/console/assets.ts:16:18`) or in a package (`node_modules/fastify/lib/route.js:…`),
 * read from FILE or from the standard input. The server does not load its source maps (they would
 * cost it 55-75 MB, bench/FINDINGS.md); this reads them, beside the bundle, afterwards.
 * bench/profile-summary.ts names a profile's functions by it too.
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A place in a file: its path, and its line and column counted from 1, as a trace gives them. */
export interface Place {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

const maps = new Map<string, SourceMap | undefined>();

/** The source map beside a file of the bundle, read once; undefined when it has none. */
function mapOf(file: string): SourceMap | undefined {
  if (!maps.has(file)) {
    let map: SourceMap | undefined;
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
    } catch {
      map = undefined;
    }
    maps.set(file, map);
  }
  return maps.get(file);
}

/**
 * Where a place in a built file (an absolute path or a file: URL; line and column from 1) comes
 * from, as a path relative to `root`; undefined when its map does not say.
 */
export function sourcePlace(
  built: string,
  line: number,
  column: number,
  root = process.cwd(),
): Place | undefined {
  const file = built.startsWith('file:') ? fileURLToPath(built) : resolve(built);
  const entry = mapOf(file)?.findEntry(line - 1, column - 1);
  if (!entry || !('originalSource' in entry)) return undefined;
  const source = entry.originalSource.startsWith('file:')
    ? fileURLToPath(entry.originalSource)
    : join(dirname(file), entry.originalSource);
  return { file: relative(root, source), line: entry.originalLine + 1, column: entry.originalColumn + 1 };
}

/** A place in a `dist/` file of JavaScript, as traces print it: `/…/dist/x.js:12:34` or its URL. */
const BUILT_PLACE = /((?:file:\/\/)?\/[^\s():]*\/dist\/[^\s():/]+\.js):(\d+):(\d+)/g;

/** `text` with every place in the bundle given as the place in the source, where the maps say. */
export function sourceTrace(text: string, root = process.cwd()): string {
  return text.replace(BUILT_PLACE, (whole, file: string, line: string, column: string) => {
    const place = sourcePlace(file, Number(line), Number(column), root);
    return place ? `${place.file}:${place.line}:${place.column}` : whole;
  });
}

if (import.meta.main) {
  const input = process.argv[2];
  if (process.argv.length > 3 || input === '--help') {
    console.error(
      `usage: node scripts/${basename(import.meta.filename)} [FILE]   (or the trace on standard input)`,
    );
    process.exit(2);
  }
  let text: string;
  try {
    text = readFileSync(input ?? 0, 'utf8');
  } catch (err) {
    console.error(
      `source-trace: cannot read ${input ?? 'standard input'}: ${err instanceof Error ? err.message : String(err)}`,
    );
    process.exit(2);
  }
  process.stdout.write(sourceTrace(text));
}
