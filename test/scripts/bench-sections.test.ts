import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { sectionsOf, writeSection } from '../../bench/sections.ts';

test('RESULTS.md sections: each script replaces its own, the others stay, a new one goes at the end', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-bench-sections-'));
  try {
    const file = join(dir, 'RESULTS.md');
    writeFileSync(file, '# Bench\n\n<!-- a -->\nold a\n<!-- /a -->\n\ntail\n');
    writeSection(file, 'b', '<!-- b -->\nfirst b\n<!-- /b -->');
    writeSection(file, 'a', '<!-- a -->\nnew a\n<!-- /a -->');
    const text = readFileSync(file, 'utf8');
    assert.equal(
      text,
      '# Bench\n\n<!-- a -->\nnew a\n<!-- /a -->\n\ntail\n\n<!-- b -->\nfirst b\n<!-- /b -->\n',
    );
    assert.deepEqual([...sectionsOf(text).keys()], ['a', 'b']);
    // The full bench rewrites the file, then puts every section back.
    const kept = sectionsOf(text);
    writeFileSync(file, '# Bench, run again\n');
    for (const [name, s] of kept) writeSection(file, name, s.text);
    assert.equal(
      readFileSync(file, 'utf8'),
      '# Bench, run again\n\n<!-- a -->\nnew a\n<!-- /a -->\n\n<!-- b -->\nfirst b\n<!-- /b -->\n',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
