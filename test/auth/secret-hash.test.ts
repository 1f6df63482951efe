import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { generateSecret, hashSecret, SECRET_COST, verifySecret } from '../../src/auth/secret-hash.ts';
import { TEST_SECRET_COST } from '../helpers/secret-cost.ts';

describe('client secret hashing (scrypt, salted)', () => {
  test('a hash verifies its own secret and no other', async () => {
    const secret = generateSecret();
    const hash = await hashSecret(secret);
    assert.match(hash, /^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    assert.ok(hash.startsWith(`scrypt$${SECRET_COST.N}$${SECRET_COST.r}$${SECRET_COST.p}$`), 'the real cost');
    assert.ok(!hash.includes(secret), 'the secret must not appear in its hash');
    assert.equal(await verifySecret(secret, hash), true);
    assert.equal(await verifySecret(`${secret}x`, hash), false);
    assert.equal(await verifySecret('', hash), false);
  });

  test('the same secret hashes differently each time (random salt), and both verify', async () => {
    const [a, b] = await Promise.all([
      hashSecret('s3cret', TEST_SECRET_COST),
      hashSecret('s3cret', TEST_SECRET_COST),
    ]);
    assert.notEqual(a, b);
    assert.equal(await verifySecret('s3cret', a), true);
    assert.equal(await verifySecret('s3cret', b), true);
  });

  test('generated secrets are 256-bit, URL-safe and unique', () => {
    const secrets = new Set(Array.from({ length: 50 }, generateSecret));
    assert.equal(secrets.size, 50);
    for (const s of secrets) {
      assert.match(s, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(Buffer.from(s, 'base64url').length, 32);
    }
  });

  test('a malformed stored hash verifies as false, without throwing', async () => {
    const good = await hashSecret('x', TEST_SECRET_COST);
    const malformed = [
      '',
      'plain-text-secret',
      'x',
      'scrypt$1$2$3',
      `bcrypt${good.slice('scrypt'.length)}`,
      `${good}$extra`,
      good.replace(/\$[^$]+$/, '$'),
      good.replace(/\$[^$]+$/, '$!!!'),
      // Unusable cost parameters: still "false", never an exception that becomes a 500.
      'scrypt$abc$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      'scrypt$3$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    ];
    for (const stored of malformed) {
      assert.equal(await verifySecret('x', stored), false, `stored hash ${JSON.stringify(stored)}`);
    }
  });
});
