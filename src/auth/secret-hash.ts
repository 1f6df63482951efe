import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

// scrypt cost: N=2^15, r=8, p=1 (OWASP's minimum is 2^17 with r=8 for passwords; client secrets
// are 256-bit random values, so the hash only has to resist a leaked table, not a dictionary).
const PARAMS = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const KEY_LEN = 32;

function derive(secret: string, salt: Buffer, params: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, KEY_LEN, params, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** A salted scrypt hash: `scrypt$N$r$p$salt$hash` (base64url). */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(secret, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join(
    '$',
  );
}

/** Compares in constant time; false for any malformed stored hash. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, hash] = parts;
  const expected = Buffer.from(hash!, 'base64url');
  try {
    const key = await derive(secret, Buffer.from(salt!, 'base64url'), {
      N: Number(n),
      r: Number(r),
      p: Number(p),
      maxmem: PARAMS.maxmem,
    });
    return key.length === expected.length && timingSafeEqual(key, expected);
  } catch {
    // Parameters scrypt refuses (a damaged stored hash): no secret matches it.
    return false;
  }
}

/** A new random secret for an application: 256 bits, URL-safe. */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}
