import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findUnstorableText, isStorableText } from '../../src/domain/storable-text.ts';

test('ordinary text, emoji (a surrogate pair) and other control characters are storable', () => {
  for (const s of ['', 'web1.example.com', 'invoice overdue', '😀 ok', 'tab\tand\nnewline', 'ü']) {
    assert.equal(isStorableText(s), true, JSON.stringify(s));
  }
});

test('U+0000 and lone surrogates are not', () => {
  for (const s of ['a\u0000b', '\u0000', 'x\uD800', '\uD800y', 'z\uDC00', '\uDC00\uD800']) {
    assert.equal(isStorableText(s), false, JSON.stringify(s));
  }
});

test('findUnstorableText names the first bad string, keys included', () => {
  assert.equal(findUnstorableText({ a: 'ok', b: ['x', 'y\u0000'] }), 'b[1]');
  assert.equal(findUnstorableText({ 'k\u0000': 1 }), 'k\u0000');
  assert.equal(findUnstorableText({ nested: { reason: '\uD800' } }, 'body'), 'body.nested.reason');
  assert.equal(findUnstorableText('\u0000'), '(value)');
  assert.equal(findUnstorableText({ a: 1, b: null, c: [true, 'fine'] }), undefined);
});
