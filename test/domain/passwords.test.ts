import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { checkPasswordStrength, generatePassword } from '../../src/domain/passwords.ts';

const ALPHABET = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789-_.+=@%';

describe('generated server passwords', () => {
  test('20 characters from the alphabet, every class present, accepted by the strength check', () => {
    for (let i = 0; i < 2000; i++) {
      const p = generatePassword(randomBytes);
      assert.equal(p.length, 20);
      for (const c of p) assert.ok(ALPHABET.includes(c), `unexpected character ${c} in ${p}`);
      assert.match(p, /[a-z]/);
      assert.match(p, /[A-Z]/);
      assert.match(p, /[2-9]/);
      assert.match(p, /[-_.+=@%]/);
      checkPasswordStrength(p);
    }
  });

  test('other lengths are honoured', () => {
    assert.equal(generatePassword(randomBytes, 8).length, 8);
    assert.equal(generatePassword(randomBytes, 128).length, 128);
  });

  test('no repeats, and every character of the alphabet is about equally likely', () => {
    const seen = new Set<string>();
    const counts = new Map<string, number>();
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      const p = generatePassword(randomBytes);
      assert.ok(!seen.has(p), 'a password repeated');
      seen.add(p);
      for (const c of p) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    assert.equal(counts.size, ALPHABET.length);
    // Within a class the characters are uniform: compare each to its class's mean.
    for (const cls of ['abcdefghijkmnopqrstuvwxyz', 'ABCDEFGHJKLMNPQRSTUVWXYZ', '23456789', '-_.+=@%']) {
      const mean = [...cls].reduce((s, c) => s + counts.get(c)!, 0) / cls.length;
      for (const c of cls) {
        const deviation = Math.abs(counts.get(c)! - mean) / mean;
        assert.ok(
          deviation < 0.1,
          `${c} appears ${counts.get(c)} times against a mean of ${mean.toFixed(0)}`,
        );
      }
    }
  });
});
