import { randomPoolBytes } from '../auth/random-pool.ts';

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits.
 * Still a UUID to every client and still unguessable (74 bits), but new ids sort after old
 * ones, so the primary-key index grows at its end instead of at a random page: inserts touch
 * pages already in cache. Its time is the creation time, which `created_at` shows anyway.
 */
export function uuidv7(nowMs: number = Date.now()): string {
  const b = randomPoolBytes(16);
  const ms = Math.max(0, Math.floor(nowMs));
  b.writeUIntBE(ms % 2 ** 48, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
