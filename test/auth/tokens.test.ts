import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { createTokenSigner, type TokenClaims } from '../../src/auth/tokens.ts';

const NOW = Date.UTC(2030, 0, 1);
const claims: TokenClaims = {
  clientId: 'vrp_0123456789abcdef01234567',
  resellerId: '6f1c2b7e-0d6a-4b8e-9a51-3f2d7c1e8b90',
  scopes: ['access', 'products'],
  version: 3,
  exp: NOW / 1000 + 3600,
};

/** Replaces one character of `s` at `at` with a different base64url character. */
function change(s: string, at: number): string {
  const c = s[at] === 'A' ? 'B' : 'A';
  return s.slice(0, at) + c + s.slice(at + 1);
}

describe('access token signer', () => {
  test('a token verifies to the claims it was issued with', () => {
    const signer = createTokenSigner(randomBytes(32));
    const token = signer.issue(claims);
    assert.match(token, /^vrp1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    assert.deepEqual(signer.verify(token, NOW), claims);
  });

  test('two tokens for the same claims differ (unique id)', () => {
    const signer = createTokenSigner(randomBytes(32));
    assert.notEqual(signer.issue(claims), signer.issue(claims));
  });

  test('a changed payload is rejected', () => {
    const signer = createTokenSigner(randomBytes(32));
    const token = signer.issue(claims);
    const [prefix, body, sig] = token.split('.') as [string, string, string];
    for (const at of [0, Math.floor(body.length / 2), body.length - 2]) {
      assert.equal(signer.verify(`${prefix}.${change(body, at)}.${sig}`, NOW), undefined);
    }
    // A payload claiming more scopes, re-encoded, keeps the old signature: rejected.
    const forged = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    forged.s = 'access products service';
    const forgedBody = Buffer.from(JSON.stringify(forged)).toString('base64url');
    assert.equal(signer.verify(`${prefix}.${forgedBody}.${sig}`, NOW), undefined);
  });

  test('once a token is verified and remembered, a forgery that ends as it does is still rejected', () => {
    const signer = createTokenSigner(randomBytes(32));
    const token = signer.issue(claims);
    assert.deepEqual(signer.verify(token, NOW), claims);
    const [prefix, body, sig] = token.split('.') as [string, string, string];
    const forged = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    forged.s = 'access products service';
    const forgedBody = Buffer.from(JSON.stringify(forged)).toString('base64url');
    // The same last characters (the whole signature, and more) as the remembered token's.
    for (const fake of [
      `${prefix}.${forgedBody}.${sig}`,
      `${prefix}.${change(body, 0)}.${sig}`,
      `x${token}`,
    ]) {
      assert.equal(fake.slice(-43), token.slice(-43));
      assert.equal(signer.verify(fake, NOW), undefined, fake);
    }
    // The genuine token is still remembered and verifies, and expires as before.
    assert.deepEqual(signer.verify(token, NOW), claims);
    assert.equal(signer.verify(token, claims.exp * 1000), undefined);
  });

  test('a changed or missing signature is rejected', () => {
    const signer = createTokenSigner(randomBytes(32));
    const token = signer.issue(claims);
    const dot = token.lastIndexOf('.');
    assert.equal(signer.verify(change(token, dot + 1), NOW), undefined);
    assert.equal(signer.verify(token.slice(0, -2), NOW), undefined);
    assert.equal(signer.verify(token.slice(0, dot), NOW), undefined);
    assert.equal(signer.verify(`${token.slice(0, dot)}.`, NOW), undefined);
  });

  test('an expired token is rejected, from the second of its expiry', () => {
    const signer = createTokenSigner(randomBytes(32));
    const token = signer.issue(claims);
    assert.ok(signer.verify(token, claims.exp * 1000 - 1));
    assert.equal(signer.verify(token, claims.exp * 1000), undefined);
    assert.equal(signer.verify(token, claims.exp * 1000 + 60_000), undefined);
  });

  test('a token signed with another key is rejected', () => {
    const token = createTokenSigner(randomBytes(32)).issue(claims);
    assert.equal(createTokenSigner(randomBytes(32)).verify(token, NOW), undefined);
  });

  test('a token has one spelling: every one-character change or addition is rejected', () => {
    const signer = createTokenSigner(randomBytes(32));
    const token = signer.issue(claims);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/.';
    const accepted: string[] = [];
    for (let at = 0; at < token.length; at++) {
      for (const c of alphabet) {
        if (c === token[at]) continue;
        const other = token.slice(0, at) + c + token.slice(at + 1);
        if (signer.verify(other, NOW)) accepted.push(other);
      }
    }
    for (const c of alphabet) {
      if (signer.verify(token + c, NOW)) accepted.push(token + c);
    }
    assert.deepEqual(accepted, []);
    // The original is still accepted (the rejections above are not a broken signer).
    assert.deepEqual(signer.verify(token, NOW), claims);
  });

  test('garbage is rejected without throwing', () => {
    const signer = createTokenSigner(randomBytes(32));
    const good = signer.issue(claims);
    for (const bad of [
      '',
      'vrp1.',
      'vrp1..',
      'abc.def.ghi',
      good.replace('vrp1.', 'vrp2.'),
      `${good}x`.repeat(200),
    ]) {
      assert.equal(signer.verify(bad, NOW), undefined, JSON.stringify(bad.slice(0, 40)));
    }
  });
});
