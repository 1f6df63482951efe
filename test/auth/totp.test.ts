import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Secret } from 'otpauth';
import { matchTotp, totpCode, totpStep, totpUri } from '../../src/auth/totp.ts';

/** RFC 6238 appendix B's SHA-1 key: the ASCII bytes "12345678901234567890". */
const RFC_SECRET = Secret.fromLatin1('12345678901234567890').base32;

describe('TOTP (RFC 6238, SHA-1, 30 s, 6 digits)', () => {
  test("RFC 6238's SHA-1 test vectors, their last six digits", () => {
    // The RFC's 8-digit values: 94287082, 07081804, 14050471, 89005924, 69279037, 65353130.
    const vectors: [number, string][] = [
      [59, '287082'],
      [1111111109, '081804'],
      [1111111111, '050471'],
      [1234567890, '005924'],
      [2000000000, '279037'],
      [20000000000, '353130'],
    ];
    for (const [seconds, code] of vectors) {
      assert.equal(totpCode(RFC_SECRET, seconds * 1000), code, `T = ${seconds}`);
      assert.equal(matchTotp(RFC_SECRET, code, seconds * 1000, null), totpStep(seconds * 1000));
    }
  });

  test('one step of drift either way is accepted, two are refused', () => {
    const now = 1_800_000_000_000;
    const step = totpStep(now);
    const at = (s: number) => totpCode(RFC_SECRET, s * 30_000);
    assert.equal(matchTotp(RFC_SECRET, at(step), now, null), step);
    assert.equal(matchTotp(RFC_SECRET, at(step - 1), now, null), step - 1);
    assert.equal(matchTotp(RFC_SECRET, at(step + 1), now, null), step + 1);
    assert.equal(matchTotp(RFC_SECRET, at(step - 2), now, null), undefined);
    assert.equal(matchTotp(RFC_SECRET, at(step + 2), now, null), undefined);
  });

  test('a code is accepted only for a step after the last one accepted', () => {
    const now = 1_800_000_000_000;
    const step = totpStep(now);
    const code = totpCode(RFC_SECRET, now);
    assert.equal(matchTotp(RFC_SECRET, code, now, step - 1), step);
    // Used: the same code again, or any code of an earlier step, is refused.
    assert.equal(matchTotp(RFC_SECRET, code, now, step), undefined);
    assert.equal(matchTotp(RFC_SECRET, totpCode(RFC_SECRET, now - 30_000), now, step), undefined);
    // The next step's code still passes (a phone a little ahead).
    assert.equal(matchTotp(RFC_SECRET, totpCode(RFC_SECRET, now + 30_000), now, step), step + 1);
  });

  test('what is not six digits is no code', () => {
    const now = 1_800_000_000_000;
    for (const code of ['', '12345', '1234567', 'abcdef', ' 123456']) {
      assert.equal(matchTotp(RFC_SECRET, code, now, null), undefined, JSON.stringify(code));
    }
  });

  test('the URI an app reads names the issuer, the operator and the settings', () => {
    const uri = new URL(totpUri(RFC_SECRET, 'VPS provider console', 'alice'));
    assert.equal(uri.protocol, 'otpauth:');
    assert.equal(uri.host, 'totp');
    assert.equal(uri.searchParams.get('secret'), RFC_SECRET);
    assert.equal(uri.searchParams.get('algorithm'), 'SHA1');
    assert.equal(uri.searchParams.get('digits'), '6');
    assert.equal(uri.searchParams.get('period'), '30');
    assert.equal(uri.searchParams.get('issuer'), 'VPS provider console');
  });
});
