const PG_UNAVAILABLE = new Set([
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
  '53300',
]);
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/** Is this error the database being out of reach (not a bug)? Answers 503, not 500. */
export function isStoreUnavailable(err: unknown): boolean {
  let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 5; depth++) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (PG_UNAVAILABLE.has(code) || NET_CODES.has(code)) return true;
    if (code === 'ERR_SQLITE_ERROR' && /database is locked|busy/i.test(String(e.message))) return true;
    const msg = String(e.message ?? '');
    if (
      /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
        msg,
      )
    ) {
      return true;
    }
    e = e.cause as typeof e;
  }
  return false;
}

/** A unique or primary key violation (SQLite or PostgreSQL). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown } | undefined;
  if (!e) return false;
  if (e.code === '23505') return true;
  return /UNIQUE constraint failed|PRIMARY KEY constraint failed/i.test(String(e.message ?? ''));
}
