import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { createSecretBox } from '../../src/auth/secret-box.ts';

const key = randomBytes(32);

/** Flips one bit of the base64url segment `index` of a sealed value. */
function flip(sealed: string, index: number): string {
  const parts = sealed.split('.');
  const bytes = Buffer.from(parts[index]!, 'base64url');
  bytes[0] = bytes[0]! ^ 1;
  parts[index] = bytes.toString('base64url');
  return parts.join('.');
}

describe('secret box (AES-256-GCM for server passwords at rest)', () => {
  test('seal then open gives the plain text back', () => {
    const box = createSecretBox(key);
    for (const plain of ['Tr0ub4dor&3', '', 'ünïcødé pässwörd ✓', 'x'.repeat(500)]) {
      const sealed = box.seal(plain);
      assert.ok(!sealed.includes(plain) || plain === '', 'sealed text must not contain the plain text');
      assert.equal(box.open(sealed), plain);
    }
  });

  test('the same plain text seals differently each time (random IV)', () => {
    const box = createSecretBox(key);
    const a = box.seal('same password');
    const b = box.seal('same password');
    assert.notEqual(a, b);
    assert.equal(box.open(a), box.open(b));
  });

  test('tampering with IV, tag or ciphertext makes open throw', () => {
    const box = createSecretBox(key);
    const sealed = box.seal('Secret-Password-1');
    for (const index of [1, 2, 3]) {
      assert.throws(() => box.open(flip(sealed, index)), `segment ${index} tampered`);
    }
    assert.throws(() => box.open(sealed.split('.').slice(0, 3).join('.')));
  });

  test('another key cannot open it', () => {
    const sealed = createSecretBox(key).seal('Secret-Password-1');
    assert.throws(() => createSecretBox(randomBytes(32)).open(sealed));
  });

  test('something that is not a sealed value is refused', () => {
    const box = createSecretBox(key);
    for (const bad of ['', 'plain', 'v2.a.b.c', 'v1..b.c']) {
      assert.throws(() => box.open(bad), `open(${JSON.stringify(bad)})`);
    }
  });

  test('the key must be 32 bytes', () => {
    assert.throws(() => createSecretBox(randomBytes(16)), /32 bytes/);
    assert.throws(() => createSecretBox(Buffer.alloc(0)), /32 bytes/);
  });
});
