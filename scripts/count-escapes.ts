/**
 * Counts the type system's escape hatches in our sources (`npm run escapes`): casts (`x as T`
 * and `<T>x`; `as const` only narrows and is not one) and non-null assertions (`x!`). Each
 * says "trust me" where the types could say it instead; the counts are a ceiling that CI
 * holds (`--max-casts N --max-non-null N` exits 1 above either), so they only go down.
 *
 *   node scripts/count-escapes.ts [dir ...] [--top N] [--max-casts N] [--max-non-null N]
 *
 * The directories default to `src`; every `*.ts` file under them is read (parsed only, not
 * type-checked: the TypeScript compiler's parser from the devDependency).
 */
import { globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/** The escape hatches of one file. */
export interface FileEscapes {
  readonly file: string;
  readonly casts: number;
  readonly nonNull: number;
}

/** Counts the casts and non-null assertions in one file's text. */
export function countEscapes(file: string, text: string): FileEscapes {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  let casts = 0;
  let nonNull = 0;
  const visit = (node: ts.Node): void => {
    if (ts.isAsExpression(node) && !ts.isConstTypeReference(node.type)) casts++;
    else if (ts.isTypeAssertionExpression(node) && !ts.isConstTypeReference(node.type)) casts++;
    else if (ts.isNonNullExpression(node)) nonNull++;
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { file, casts, nonNull };
}

/** The escape hatches of every `*.ts` file under the directories, by file (sorted by path). */
export function countTree(dirs: readonly string[]): FileEscapes[] {
  const files = dirs.flatMap((dir) => globSync('**/*.ts', { cwd: dir }).map((f) => join(dir, f)));
  return files.sort().map((file) => countEscapes(file, readFileSync(file, 'utf8')));
}

interface Options {
  readonly dirs: string[];
  readonly top: number;
  readonly maxCasts: number | undefined;
  readonly maxNonNull: number | undefined;
}

function parseArgs(args: readonly string[]): Options {
  const dirs: string[] = [];
  const numbers = new Map<string, number>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (!arg.startsWith('--')) {
      dirs.push(arg);
      continue;
    }
    if (!['--top', '--max-casts', '--max-non-null'].includes(arg)) throw new Error(`unknown option ${arg}`);
    const value = args[++i] ?? '';
    if (!/^\d+$/.test(value)) throw new Error(`${arg} needs a whole number (got ${JSON.stringify(value)})`);
    numbers.set(arg, Number(value));
  }
  return {
    dirs: dirs.length > 0 ? dirs : ['src'],
    top: numbers.get('--top') ?? 10,
    maxCasts: numbers.get('--max-casts'),
    maxNonNull: numbers.get('--max-non-null'),
  };
}

/** Prints the totals and the files with the most escapes; the exit code: 1 above a ceiling. */
export function report(options: Options, print: (line: string) => void): number {
  const counts = countTree(options.dirs);
  const casts = counts.reduce((sum, c) => sum + c.casts, 0);
  const nonNull = counts.reduce((sum, c) => sum + c.nonNull, 0);
  print(
    `${counts.length} files in ${options.dirs.join(', ')}: ${casts} casts, ${nonNull} non-null assertions`,
  );
  const worst = counts
    .filter((c) => c.casts + c.nonNull > 0)
    .sort((a, b) => b.casts + b.nonNull - (a.casts + a.nonNull) || a.file.localeCompare(b.file))
    .slice(0, options.top);
  if (worst.length > 0) print('casts non-null  file');
  for (const c of worst) print(`${String(c.casts).padStart(5)} ${String(c.nonNull).padStart(5)}  ${c.file}`);
  let status = 0;
  if (options.maxCasts !== undefined && casts > options.maxCasts) {
    print(`too many casts: ${casts} > ${options.maxCasts} (type the value instead of asserting its type)`);
    status = 1;
  }
  if (options.maxNonNull !== undefined && nonNull > options.maxNonNull) {
    print(`too many non-null assertions: ${nonNull} > ${options.maxNonNull} (narrow the value instead)`);
    status = 1;
  }
  return status;
}

if (import.meta.main) {
  let options: Options;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(2);
  }
  process.exitCode = report(options, (line) => console.log(line));
}
