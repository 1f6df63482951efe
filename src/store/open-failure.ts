import { ExpectedFailure } from '../expected-failure.ts';

/**
 * The store could not be opened for a reason the operator fixes from the message alone (the
 * database is down, the name or password is wrong): start-up prints one line, not a stack.
 */
export class StoreOpenError extends ExpectedFailure {
  override name = 'StoreOpenError';
}

const NET_CAUSES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  ENOTFOUND: 'unknown host',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EACCES: 'permission denied',
  EROFS: 'read-only file system',
  ENOTDIR: 'not a directory',
};

// PostgreSQL's own message says it best ("database \"x\" does not exist", "password
// authentication failed for user \"y\""); it never contains the password.
const PG_CAUSES = new Set(['3D000', '28P01', '28000', '57P03', '53300']);

const TIMEOUT = /timeout exceeded when trying to connect|connection timeout/i;
const SQLITE_OPEN = /unable to open database file|file is not a database/i;

/** Names the expected cause of a failed open, or undefined for anything else (a bug keeps its stack). */
export function expectedOpenCause(err: unknown): string | undefined {
  let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  // Kysely's migrator and our own wrappers put the driver's error a few `cause`s down.
  for (let depth = 0; e && depth < 5; depth++) {
    const code = typeof e.code === 'string' ? e.code : '';
    const message = String(e.message ?? '');
    const net = NET_CAUSES[code];
    if (net) return net;
    if (PG_CAUSES.has(code)) return message;
    if (TIMEOUT.test(message)) return 'connection timed out';
    if (SQLITE_OPEN.test(message)) return message;
    e = e.cause as typeof e;
  }
  return undefined;
}

/** Where the store is, for messages: `host:port/database` or the SQLite file; never a password. */
export function describeStoreLocation(databaseUrl: string | undefined, sqliteFile: string): string {
  if (!databaseUrl) return `SQLite ${sqliteFile}`;
  const url = new URL(databaseUrl);
  // libpq-style `?host=/run/postgresql` (a socket directory) wins over the URL's host.
  const host = url.searchParams.get('host') || url.hostname || 'localhost';
  const database = decodeURIComponent(url.pathname.slice(1)) || decodeURIComponent(url.username);
  return `PostgreSQL ${host}:${url.port || '5432'}/${database}`;
}
