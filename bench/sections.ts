import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * RESULTS.md holds, beside the full bench's tables, sections that other scripts measure on their
 * own (bench/libvirt.ts, bench/evacuate.ts, bench/libvirt-migration.sh), each between
 * `<!-- NAME -->` and `<!-- /NAME -->`. Each script replaces its own; the full bench, which
 * rewrites the file, carries every one over.
 */
const OPEN = /<!-- ([a-z0-9-]+) -->/g;

/** Puts `section` (starting and ending with its markers) in place of its earlier one, or at the end. */
export function writeSection(file: string, name: string, section: string): void {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const found = sectionsOf(text).get(name);
  const next = found
    ? `${text.slice(0, found.start)}${section}${text.slice(found.end)}`
    : `${text.trimEnd()}\n\n${section}\n`;
  writeFileSync(file, next);
}

/** Every section of `text`, by name, with where it stands. */
export function sectionsOf(text: string): Map<string, { start: number; end: number; text: string }> {
  const found = new Map<string, { start: number; end: number; text: string }>();
  for (const m of text.matchAll(OPEN)) {
    const name = m[1] ?? '';
    const close = `<!-- /${name} -->`;
    const b = text.indexOf(close, m.index);
    if (b < 0 || found.has(name)) continue;
    const end = b + close.length;
    found.set(name, { start: m.index, end, text: text.slice(m.index, end) });
  }
  return found;
}
