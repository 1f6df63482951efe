/**
 * The design lives in the repository (docs/design/), and everything that relies on it says so by
 * pointing there: a clone must hold every document the code, tests and docs cite. So nothing
 * cites the outside design documents or a tracker's issue numbers, and every pointer into
 * docs/design/ (`docs/design/contract.md#jobs` in a comment, `[...](design/contract.md#jobs)` in
 * a guide, `[...](#jobs)` inside docs/design/) names a file that exists and a heading it has, by
 * the anchor GitHub gives that heading.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../..');
const SCANNED = ['src', 'test', 'scripts', 'bench', 'client', 'docs', '.ci', 'README.md'];
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.tmp']);
const BINARY = /\.(png|jpe?g|gif|ico|svg|woff2?|qcow2|img|gz|tgz|zip)$/i;
const DESIGN = 'docs/design';

// Spelled in pieces, so that this file does not match what it looks for.
const OUTSIDE_DOCUMENT = new RegExp(['CONT' + 'RACT', 'ARCHI' + 'TECTURE\\.md', 'STY' + 'LE\\.md'].join('|'));
const ISSUE_NUMBER = new RegExp('\\b[Ii]ss' + 'ue #?\\d+');

/** Every text file under the scanned paths, as paths relative to the repository's root. */
function scannedFiles(): string[] {
  const files: string[] = [];
  const walk = (path: string) => {
    const full = join(ROOT, path);
    if (!existsSync(full)) return;
    if (statSync(full).isDirectory()) {
      for (const entry of readdirSync(full)) {
        if (!SKIPPED_DIRS.has(entry)) walk(join(path, entry));
      }
    } else if (!BINARY.test(path)) {
      files.push(path);
    }
  };
  for (const path of SCANNED) walk(path);
  return files.sort();
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link counts by its text
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M} _-]/gu, '').replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings (outside code blocks); repeats get -1, -2 ... */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const opening = /^\s*(```+|~~~+)/.exec(line);
    if (opening) {
      if (fence === undefined) fence = opening[1]![0]!;
      else if (opening[1]![0] === fence) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

interface Pointer {
  readonly where: string;
  /** The file pointed to, relative to the repository's root. */
  readonly file: string;
  readonly anchor: string | undefined;
}

/** The pointers into docs/design/ that `text` (the file `path`) holds. */
function pointersIn(path: string, text: string): Pointer[] {
  const pointers: Pointer[] = [];
  text.split('\n').forEach((line, i) => {
    const where = `${path}:${i + 1}`;
    // Written out as a path from the repository's root, anywhere (comments, strings, docs).
    for (const m of line.matchAll(/\bdocs\/design\/([\w.-]+\.md)(?:#([\p{L}\p{N}_-]+))?/gu)) {
      pointers.push({ where, file: `${DESIGN}/${m[1]}`, anchor: m[2] });
    }
    // Markdown links, relative to the file that holds them.
    if (!path.endsWith('.md')) return;
    for (const m of line.matchAll(/\]\(([^)\s]*)\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ...
      const [file, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved = file === '' ? path : normalize(join(dirname(path), file));
      if (resolved === DESIGN || resolved.startsWith(`${DESIGN}/`)) {
        pointers.push({ where, file: resolved, anchor: anchor || undefined });
      }
    }
  });
  return pointers;
}

const files = scannedFiles();
const texts = new Map(files.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));

test('the scan reaches every place it is meant to, docs/design/ included', () => {
  for (const path of ['src/main.ts', 'test/docs/citations.test.ts', 'README.md', 'docs/design/contract.md']) {
    assert.ok(texts.has(path), `${path} is scanned`);
  }
  assert.ok(files.some((f) => f.startsWith('client/src/')));
  assert.ok(files.some((f) => f.startsWith('bench/')));
  assert.ok(files.some((f) => f.startsWith('scripts/')));
});

test('nothing cites the outside design documents or an issue number: the rule is said, or docs/design/ is cited', () => {
  const found: string[] = [];
  for (const [path, text] of texts) {
    text.split('\n').forEach((line, i) => {
      if (OUTSIDE_DOCUMENT.test(line) || ISSUE_NUMBER.test(line)) {
        found.push(`${path}:${i + 1}: ${line.trim().slice(0, 160)}`);
      }
    });
  }
  assert.deepEqual(found, [], `cite docs/design/ or say the rule instead:\n${found.join('\n')}`);
});

test('every pointer into docs/design/ names a file there and one of its headings', () => {
  const anchors = new Map<string, Set<string>>();
  const anchorsOfFile = (file: string) => {
    let set = anchors.get(file);
    if (!set) {
      set = anchorsOf(readFileSync(join(ROOT, file), 'utf8'));
      anchors.set(file, set);
    }
    return set;
  };
  const broken: string[] = [];
  let checked = 0;
  for (const [path, text] of texts) {
    for (const p of pointersIn(path, text)) {
      checked++;
      const full = join(ROOT, p.file);
      if (!existsSync(full) || !statSync(full).isFile()) {
        broken.push(`${p.where}: ${p.file} does not exist`);
      } else if (p.anchor !== undefined && !anchorsOfFile(p.file).has(p.anchor)) {
        broken.push(`${p.where}: ${relative(ROOT, full)} has no heading #${p.anchor}`);
      }
    }
  }
  assert.deepEqual(broken, [], broken.join('\n'));
  // The code cites the contract in many places; finding none means the scan is broken.
  assert.ok(checked > 50, `only ${checked} pointers found`);
});

test('anchors as GitHub makes them', () => {
  const doc = [
    '# The contract',
    '## Token lifetime and revocation',
    '## Payloads that differ by variant',
    '### `X-Job-Id`, and a [link](x.md)',
    '```sh',
    '# not a heading',
    '```',
    '## Jobs',
    '## Jobs',
  ].join('\n');
  assert.deepEqual(
    [...anchorsOf(doc)],
    [
      'the-contract',
      'token-lifetime-and-revocation',
      'payloads-that-differ-by-variant',
      'x-job-id-and-a-link',
      'jobs',
      'jobs-1',
    ],
  );
});
