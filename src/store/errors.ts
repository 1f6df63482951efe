import { WAL_NOT_DURABLE } from './wal-sync.ts';

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
/** PostgreSQL's deadlock_detected. */
const DEADLOCK = '40P01';
/**
 * PostgreSQL's "not now" answers: a deadlock it broke by failing this side (40P01), a
 * serialization failure (40001), a lock that could not be had (55P03). The same work done again
 * succeeds; they come with concurrent schema changes (a rolling upgrade's migrations) and heavy
 * contention, never from a bug in the statement.
 */
const PG_CONFLICT = new Set([DEADLOCK, '40001', '55P03']);
/** PostgreSQL's feature_not_supported, the code of "cached plan must not change result type". */
const FEATURE_NOT_SUPPORTED = '0A000';
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/**
 * Is this error the database being out of reach, or refusing for now (a lock conflict), or a
 * SQLite store whose disk failed a flush (wal-sync.ts), not a bug? Answers 503, not 500; a job's result is saved again by its next attempt.
 */
export function isStoreUnavailable(err: unknown): boolean {
  let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 5; depth++) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (PG_UNAVAILABLE.has(code) || PG_CONFLICT.has(code) || NET_CODES.has(code)) return true;
    // SQLite's WAL could not be flushed: this process writes nothing more until restarted.
    if (code === WAL_NOT_DURABLE) return true;
    if (isCachedPlanChanged(e)) return true;
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

/** The error's `code` (SQLSTATE on PostgreSQL), if it has one that is a string. */
function codeOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
    ? err.code
    : undefined;
}

/** A PostgreSQL lock conflict (deadlock, serialization failure, lock not available): try again. */
export function isLockConflict(err: unknown): boolean {
  return PG_CONFLICT.has(codeOf(err) ?? '');
}

/** PostgreSQL broke a deadlock by failing this statement (one of the lock conflicts). */
export function isDeadlock(err: unknown): boolean {
  return codeOf(err) === DEADLOCK;
}

/**
 * A named statement whose result changed shape since its connection prepared it ("cached plan
 * must not change result type"): a newer version's migration (a rolling upgrade) gave a table it
 * reads with `select *` a column. Prepared again, it runs (pg-named.ts, hot-reads.ts); a
 * transaction it failed in is done again, so it counts as "not now" (isStoreUnavailable).
 */
export function isCachedPlanChanged(err: unknown): boolean {
  return (
    codeOf(err) === FEATURE_NOT_SUPPORTED &&
    err instanceof Error &&
    err.message.includes('cached plan must not change result type')
  );
}
