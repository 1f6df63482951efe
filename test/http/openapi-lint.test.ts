/**
 * Spectral's `spectral:oas` ruleset over docs/openapi.json, run in-process: no errors, and at
 * most 5 warnings (each printed, so a new one is read, not counted).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Document, Spectral } from '@stoplight/spectral-core';
import Parsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';

const SEVERITY = ['error', 'warning', 'information', 'hint'] as const;

test('Spectral (spectral:oas) finds no error and at most 5 warnings in docs/openapi.json', async () => {
  const text = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
  const spectral = new Spectral();
  spectral.setRuleset({ extends: [[oas as never, 'recommended']] });
  const results = await spectral.run(new Document(text, Parsers.Json, 'docs/openapi.json'));
  const lines = results.map((r) => `${SEVERITY[r.severity]} ${r.code} at ${r.path.join('.')}: ${r.message}`);
  if (lines.length > 0) console.log(lines.join('\n'));
  const count = (severity: number) => results.filter((r) => r.severity === severity).length;
  assert.equal(count(0), 0, 'errors');
  assert.ok(count(1) <= 5, `${count(1)} warnings`);
});
