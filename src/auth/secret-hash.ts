import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/** scrypt's cost parameters. A hash carries the ones it was made with, and is checked with those. */
export interface SecretCost {
  readonly N: number;
  readonly r: number;
  readonly p: number;
}

/**
 * The cost of every secret hash the server and the CLI make: N=2^15, r=8, p=1 (OWASP's minimum
 * is 2^17 with r=8 for passwords; client secrets are 256-bit random values, so the hash only has
 * to resist a leaked table, not a dictionary).
 */
export const SECRET_COST: SecretCost = Object.freeze({ N: 1 << 15, r: 8, p: 1 });

/** Passwords people choose (the operator console's) get OWASP's minimum: a dictionary is their risk. */
export const PASSWORD_COST: SecretCost = Object.freeze({ N: 1 << 17, r: 8, p: 1 });

const MAXMEM = 64 * 1024 * 1024;
const KEY_LEN = 32;

/** scrypt needs 128 * N * r bytes; room for that, and never less than the secrets' allowance. */
function maxmemFor(N: number, r: number): number {
  return Math.max(MAXMEM, 2 * 128 * N * r);
}

function derive(secret: string, salt: Buffer, params: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, KEY_LEN, params, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

async function hashWith(secret: string, cost: SecretCost): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(secret, salt, { ...cost, maxmem: maxmemFor(cost.N, cost.r) });
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/**
 * A salted scrypt hash: `scrypt$N$r$p$salt$hash` (base64url). `cost` is SECRET_COST unless a
 * test asks for less (each hash at SECRET_COST takes about 0.1 s of CPU and 32 MiB).
 */
export function hashSecret(secret: string, cost: SecretCost = SECRET_COST): Promise<string> {
  return hashWith(secret, cost);
}

/**
 * A salted scrypt hash of a password a person chose, at `cost`: PASSWORD_COST unless a test asks
 * for less (each hash at PASSWORD_COST takes about 0.5-1 s of CPU and 128 MiB). verifySecret
 * checks it too.
 */
export function hashPassword(password: string, cost: SecretCost = PASSWORD_COST): Promise<string> {
  return hashWith(password, cost);
}

/** Compares in constant time; false for any malformed stored hash. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt = '', hash = ''] = parts;
  const expected = Buffer.from(hash, 'base64url');
  try {
    const params = { N: Number(n), r: Number(r), p: Number(p) };
    // No more than a password's cost: a damaged stored hash must not make us allocate without bound.
    if (params.N * params.r > PASSWORD_COST.N * PASSWORD_COST.r) return false;
    const key = await derive(secret, Buffer.from(salt, 'base64url'), {
      ...params,
      maxmem: maxmemFor(params.N, params.r),
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
