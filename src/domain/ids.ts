const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UUID of any version, in either case: what every id of the API and of the catalogue file is. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits taken
 * from `random` (16 bytes; the first 6 make way for the time). Still a UUID to every client and
 * still unguessable (74 bits), but new ids sort after old ones, so the primary-key index grows at
 * its end instead of at a random page: inserts touch pages already in cache. Its time is the
 * creation time, which `created_at` shows anyway.
 */
export function uuidv7(nowMs: number, random: Uint8Array): string {
  if (random.length !== 16) throw new RangeError('uuidv7 takes 16 random bytes');
  const b = Buffer.from(random);
  const ms = Math.max(0, Math.floor(nowMs));
  b.writeUIntBE(ms % 2 ** 48, 0, 6);
  b[6] = (b.readUInt8(6) & 0x0f) | 0x70;
  b[8] = (b.readUInt8(8) & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * UUIDv7 ids that sort in the order they were made by this generator, also within one
 * millisecond or when the clock steps back (RFC 9562 section 6.2, method 2): such an id reuses
 * the last one's time and random bits and counts up in its last 56 bits, which stay unguessable
 * as the first value was random. `random` gives 16 fresh bytes per call.
 */
export function createMonotonicUuidv7(random: () => Uint8Array): (nowMs: number) => string {
  let lastMs = Number.NEGATIVE_INFINITY;
  let last = new Uint8Array(16);
  return (nowMs) => {
    const ms = Math.floor(nowMs);
    if (ms > lastMs) {
      lastMs = ms;
      last = Uint8Array.from(random());
    } else {
      // Bytes 9..15 as one counter; byte 8 keeps the variant bits.
      for (let i = 15; i >= 9; i--) {
        last[i] = ((last[i] ?? 0) + 1) & 0xff;
        if (last[i] !== 0) break;
      }
    }
    return uuidv7(lastMs, last);
  };
}
