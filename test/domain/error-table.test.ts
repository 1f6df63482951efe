import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ERROR_CODES } from '../../src/domain/errors.ts';

/** The rows of docs/api.md's error table: every code it names, with the HTTP status of its row. */
function documentedCodes(): Map<string, number> {
  const doc = readFileSync('docs/api.md', 'utf8');
  const table = doc.slice(doc.indexOf('## Error codes'));
  const codes = new Map<string, number>();
  for (const line of table.split('\n')) {
    const m = /^\| (\d{3}) \| (.+?) \|/.exec(line);
    if (!m) continue;
    for (const [, code] of m[2]!.matchAll(/`([a-z][a-z0-9_]*)`/g)) codes.set(code!, Number(m[1]));
  }
  return codes;
}

test("docs/api.md's error table lists exactly the codes the server can answer, each with its status", () => {
  const documented = Object.fromEntries([...documentedCodes()].sort());
  const served = Object.fromEntries(Object.entries(ERROR_CODES).sort());
  assert.deepEqual(documented, served);
});
