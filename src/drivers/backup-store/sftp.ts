import { randomBytes } from 'node:crypto';
import { createConnection, type Socket } from 'node:net';
import { posix } from 'node:path';
import { Readable } from 'node:stream';
import SftpClient from 'ssh2-sftp-client';
import type { SftpHostKeyPin, SftpHostKeyType } from '../../config.ts';
import { sshFingerprint } from '../../domain/ssh-fingerprint.ts';
import { systemCause } from '../../expected-failure.ts';
import { type BackupStore, checkKey, storeFailure } from './store.ts';

export interface SftpBackupStoreOptions {
  readonly host: string;
  readonly port: number;
  readonly username: string;
  /** The directory on the server that holds the objects (made when missing). */
  readonly path: string;
  /** The client's private key (OpenSSH or PEM, without a passphrase). */
  readonly privateKey: string | Buffer;
  /**
   * The server's host key it must offer (its fingerprint `SHA256:...`, and its type when known:
   * then only that type is asked for). Without it any host key is accepted.
   */
  readonly hostKey?: SftpHostKeyPin | undefined;
  /** How long a connection may take to be ready, TCP to authentication (ms). */
  readonly readyTimeoutMs?: number;
  /** Keepalive probes every this many ms; 3 unanswered ones end the connection. */
  readonly keepaliveMs?: number;
  /**
   * How long one SFTP request may wait for its answer (ms, default 120 s): past it the
   * connection is given up (its other requests fail with it) and the call fails as transient.
   * A server whose SSH side still answers while its file system hangs would otherwise hold the
   * job that asked for ever.
   */
  readonly requestTimeoutMs?: number;
}

/** Bytes of one put in flight at once: each write waits a round trip, so several overlap. */
const WRITE_BYTES_IN_FLIGHT = 8 * 1024 * 1024;
/** A get reads ahead this many reads of READ_BYTES, for the same reason. */
const READS_IN_FLIGHT = 16;
const READ_BYTES = 256 * 1024;

/** SFTP status codes (draft-ietf-secsh-filexfer): no such file. */
const SSH_FX_NO_SUCH_FILE = 2;

/** What ssh2 calls the host key algorithms of a key type (an RSA key signs with any of three). */
type HostKeyAlgorithms = NonNullable<
  NonNullable<Parameters<SftpClient['connect']>[0]['algorithms']>['serverHostKey']
>;
function hostKeyAlgorithms(type: SftpHostKeyType): HostKeyAlgorithms {
  return type === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [type];
}

/** The server offered a host key other than the pinned one. */
class HostKeyMismatch extends Error {
  readonly offered: string;
  constructor(offered: string) {
    super(`the server's host key (${offered}) does not match the pinned one`);
    this.offered = offered;
  }
}

/** The SFTP session of a connection (ssh2's SFTPWrapper). */
type SFTPWrapper = Awaited<ReturnType<SftpClient['connect']>>;

/** What is used of a file's attributes. */
interface Stats {
  readonly size: number;
  isDirectory(): boolean;
  isFile(): boolean;
}

interface Connection {
  readonly client: SftpClient;
  readonly sftp: SFTPWrapper;
  /** Its TCP socket: destroyed, the connection ends at once whatever the server does. */
  readonly sock: Socket;
  alive: boolean;
}

/**
 * A connection's SFTP session and its requests. A request sent after the session ended would
 * never be answered (ssh2 drops it), so each checks first that the connection is alive.
 */
interface Session {
  readonly sftp: SFTPWrapper;
  call<T>(start: (cb: (err: Error | undefined | null, value: T) => void) => void): Promise<T>;
}

/**
 * `sftp://user@host[:port]/path`: a directory on an SFTP server, reached with a key. One
 * connection serves every call and is opened again after it drops. An object is written to a
 * part file beside its key and renamed into place (an atomic replace where the server offers
 * posix-rename, as OpenSSH does), so a failed put leaves neither a torn object nor a part
 * under the key.
 */
export function sftpBackupStore(options: SftpBackupStoreOptions): BackupStore {
  const root = posix.normalize(options.path).replace(/(.)\/+$/, '$1');
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const description = `sftp://${options.username}@${host}:${options.port}${root.startsWith('/') ? '' : '/'}${root}`;
  const path = (key: string) => posix.join(root, checkKey(key));

  let current: Connection | undefined;
  let opening: Promise<Connection> | undefined;
  let closed = false;

  const fail = (what: string, err: unknown): never => {
    throw storeFailure(description, what, describeError(err, options), isMissing(err), err);
  };

  const open = async (): Promise<Connection> => {
    const client = new SftpClient('vrp-backup-store', {
      // The library's defaults print to the console; the state is kept by the listeners below.
      error: () => {},
      end: () => {},
      close: () => {},
    });
    const pin = options.hostKey;
    let offered: string | undefined;
    let sftp: SFTPWrapper;
    // Each SFTP request leaves at once (TCP_NODELAY): with Nagle's algorithm a small request
    // waits for the answer to the one before, about 40 ms a call.
    const sock = createConnection({ host: options.host, port: options.port, noDelay: true });
    try {
      sftp = await client.connect({
        sock,
        host: options.host,
        port: options.port,
        username: options.username,
        privateKey: options.privateKey,
        readyTimeout: options.readyTimeoutMs ?? 20_000,
        keepaliveInterval: options.keepaliveMs ?? 15_000,
        keepaliveCountMax: 3,
        ...(pin && {
          hostVerifier: (key: Buffer) => {
            offered = sshFingerprint(key);
            return offered === pin.fingerprint;
          },
          ...(pin.type && { algorithms: { serverHostKey: hostKeyAlgorithms(pin.type) } }),
        }),
      });
    } catch (err) {
      // Not client.end(): before the SFTP session is ready it leaves the SSH connection open.
      sock.destroy();
      if (pin && offered !== undefined && offered !== pin.fingerprint) throw new HostKeyMismatch(offered);
      throw err;
    }
    const conn: Connection = { client, sftp, sock, alive: true };
    const dead = () => {
      conn.alive = false;
    };
    for (const event of ['close', 'end', 'error']) client.on(event, dead);
    sftp.on('end', dead);
    sftp.on('close', dead);
    return conn;
  };

  const connection = async (): Promise<{ conn: Connection; fresh: boolean }> => {
    if (closed) throw new Error('the store is closed');
    if (current?.alive) return { conn: current, fresh: false };
    if (current) {
      const old = current;
      current = undefined;
      old.sock.destroy();
    }
    opening ??= open().finally(() => {
      opening = undefined;
    });
    const conn = await opening;
    current = conn;
    return { conn, fresh: true };
  };

  const requestTimeoutMs = options.requestTimeoutMs ?? 120_000;
  const session = (conn: Connection): Session => ({
    sftp: conn.sftp,
    call: (start) =>
      conn.alive
        ? call(start, requestTimeoutMs, () => {
            // No answer in time: this connection is given up, and with it its other requests.
            conn.alive = false;
            conn.sock.destroy();
          })
        : Promise.reject(new Error('Not connected')),
  });

  /**
   * Runs `op` on the connection. A call that finds the reused connection dead (the server
   * restarted, a network blip) runs once more on a new one when `again` allows it: a put's
   * source cannot be read twice.
   */
  const run = async <T>(what: string, op: (s: Session) => Promise<T>, again = true): Promise<T> => {
    for (let retry = again; ; retry = false) {
      let attempt: { conn: Connection; fresh: boolean };
      try {
        attempt = await connection();
      } catch (err) {
        return fail('cannot connect', err);
      }
      try {
        return await op(session(attempt.conn));
      } catch (err) {
        if (!retry || attempt.fresh || (attempt.conn.alive && !lost(err))) return fail(what, err);
        attempt.conn.alive = false;
      }
    }
  };

  const mkdirs = async (s: Session, dir: string): Promise<void> => {
    const made = await s.call<Stats | undefined>((cb) =>
      s.sftp.stat(dir, (err, stats) => (err && isMissing(err) ? cb(undefined, undefined) : cb(err, stats))),
    );
    if (made?.isDirectory()) return;
    if (made) throw Object.assign(new Error(`${dir} is not a directory`), { code: 'ENOTDIR' });
    const parent = posix.dirname(dir);
    if (parent !== dir) await mkdirs(s, parent);
    await s.call<void>((cb) =>
      s.sftp.mkdir(dir, { mode: 0o700 }, (err) => {
        // Another put made it meanwhile.
        if (err) s.sftp.stat(dir, (e2, st) => cb(e2 || !st.isDirectory() ? err : undefined));
        else cb(undefined);
      }),
    );
  };

  const walk = async (s: Session, dir: string, out: string[], parts: boolean): Promise<void> => {
    let entries: { filename: string; attrs: Stats }[];
    try {
      entries = await s.call((cb) => s.sftp.readdir(dir, cb));
    } catch (err) {
      if (isMissing(err)) return;
      throw err;
    }
    for (const e of entries) {
      const full = posix.join(dir, e.filename);
      if (e.attrs.isDirectory()) await walk(s, full, out, parts);
      else if (e.attrs.isFile() && (parts || !e.filename.includes('.part-')))
        out.push(posix.relative(root, full));
    }
  };

  return {
    description,

    async put(key, data) {
      const file = path(key);
      const part = `${file}.part-${randomBytes(6).toString('hex')}`;
      return run(
        `cannot write ${key}`,
        async (s) => {
          try {
            await mkdirs(s, posix.dirname(file));
            const bytes = await writeFile(s, part, data);
            await replace(s, part, file);
            return bytes;
          } catch (err) {
            await s.call<void>((cb) => s.sftp.unlink(part, () => cb(undefined))).catch(() => {});
            throw err;
          }
        },
        false,
      );
    },

    async get(key, range) {
      const file = path(key);
      return run(`cannot read ${key}`, async (s) => {
        const { size } = await s.call<Stats>((cb) => s.sftp.stat(file, cb));
        const handle = await s.call<Buffer>((cb) => s.sftp.open(file, 'r', cb));
        const start = range?.start ?? 0;
        const end = Math.min(range?.end ?? size - 1, size - 1);
        return Readable.from(readRange(s, handle, start, end), { objectMode: false });
      });
    },

    async size(key) {
      const file = path(key);
      return run(`cannot read ${key}`, async (s) => {
        try {
          return (await s.call<Stats>((cb) => s.sftp.stat(file, cb))).size;
        } catch (err) {
          if (isMissing(err)) return undefined;
          throw err;
        }
      });
    },

    async list(prefix, options) {
      const start = posix.join(root, checkKey(prefix.replace(/\/+$/, '')));
      return run(`cannot list ${prefix}`, async (s) => {
        const out: string[] = [];
        await walk(s, start, out, options?.parts ?? false);
        return out;
      });
    },

    async delete(key) {
      const file = path(key);
      await run(`cannot delete ${key}`, async (s) => {
        try {
          await s.call<void>((cb) => s.sftp.unlink(file, cb));
        } catch (err) {
          if (!isMissing(err)) throw err;
        }
      });
    },

    async probe() {
      const file = posix.join(root, `.probe-${randomBytes(6).toString('hex')}`);
      await run('cannot write', async (s) => {
        await mkdirs(s, root);
        await writeFile(s, file, Readable.from([Buffer.from('vrp')]));
        await s.call<void>((cb) => s.sftp.unlink(file, cb));
      });
    },

    async close() {
      closed = true;
      const conn = current ?? (await opening?.catch(() => undefined));
      current = undefined;
      if (conn) await endConnection(conn);
    },
  };
}

/** Ends a connection politely, or at once if the server does not close its side within 2 s. */
async function endConnection(conn: Connection): Promise<void> {
  if (!conn.alive) {
    conn.sock.destroy();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    conn.client.end().catch(() => {}),
    new Promise((resolve) => {
      timer = setTimeout(resolve, 2000);
    }),
  ]);
  clearTimeout(timer);
  conn.sock.destroy();
}

/** One SFTP request; one not answered within `timeoutMs` fails, after `onTimeout`. */
function call<T>(
  start: (cb: (err: Error | undefined | null, value: T) => void) => void,
  timeoutMs: number,
  onTimeout: () => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      onTimeout();
      reject(new RequestTimeout(timeoutMs));
    }, timeoutMs);
    start((err, value) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(value);
    });
  });
}

/** A request the server did not answer in time. */
class RequestTimeout extends Error {
  constructor(ms: number) {
    super(`no answer to a request within ${ms / 1000} s`);
  }
}

/** ssh2's words for a request whose connection went away under it. */
function lost(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  return (
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    (err instanceof Error &&
      /No response from server|Not connected|Channel not open|No SFTP/i.test(err.message))
  );
}

function isMissing(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  return code === SSH_FX_NO_SUCH_FILE || code === 'ENOENT';
}

/**
 * Streams `data` into a new file `file`, several writes in flight (each waits for the server's
 * answer), then asks the server to flush it to disk where it can (fsync@openssh.com).
 */
async function writeFile(s: Session, file: string, data: Readable | AsyncIterable<Buffer>): Promise<number> {
  const handle = await s.call<Buffer>((cb) => s.sftp.open(file, 'w', { mode: 0o600 }, cb));
  const inFlight = new Set<Promise<void>>();
  let inFlightBytes = 0;
  let position = 0;
  try {
    for await (const chunk of data) {
      const buf: Buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      if (buf.length === 0) continue;
      const at = position;
      position += buf.length;
      inFlightBytes += buf.length;
      const write: Promise<void> = s
        .call<void>((cb) => s.sftp.write(handle, buf, 0, buf.length, at, cb))
        .finally(() => {
          inFlight.delete(write);
          inFlightBytes -= buf.length;
        });
      // Seen by Promise.race or Promise.all below; never left unhandled meanwhile.
      write.catch(() => {});
      inFlight.add(write);
      while (inFlightBytes >= WRITE_BYTES_IN_FLIGHT) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    await fsync(s, handle);
  } finally {
    await Promise.allSettled(inFlight);
    await s.call<void>((cb) => s.sftp.close(handle, cb)).catch(() => {});
  }
  return position;
}

async function fsync(s: Session, handle: Buffer): Promise<void> {
  try {
    await s.call<void>((cb) => s.sftp.ext_openssh_fsync(handle, cb));
  } catch (err) {
    if (!unsupported(err)) throw err;
  }
}

/** ssh2 refuses an extension the server did not announce with this. */
function unsupported(err: unknown): boolean {
  return err instanceof Error && /does not support this extended request/.test(err.message);
}

/**
 * Bytes `start` to `end` of an open file, several reads in flight, in order; closes the
 * handle when done, failed or abandoned by the reader.
 */
async function* readRange(s: Session, handle: Buffer, start: number, end: number): AsyncGenerator<Buffer> {
  const readFully = async (at: number, length: number): Promise<Buffer> => {
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const n = await s.call<number>((cb) => s.sftp.read(handle, buf, got, length - got, at + got, cb));
      if (!n) break; // the end of the file
      got += n;
    }
    return buf.subarray(0, got);
  };
  const pending: { length: number; read: Promise<Buffer> }[] = [];
  let next = start;
  const fill = () => {
    while (pending.length < READS_IN_FLIGHT && next <= end) {
      const length = Math.min(READ_BYTES, end + 1 - next);
      const read = readFully(next, length);
      read.catch(() => {}); // awaited in turn below
      pending.push({ length, read });
      next += length;
    }
  };
  try {
    fill();
    for (let head = pending.shift(); head; head = pending.shift()) {
      const buf = await head.read;
      if (buf.length > 0) yield buf;
      if (buf.length < head.length) return; // the file is shorter than it was
      fill();
    }
  } finally {
    await Promise.allSettled(pending.map((p) => p.read));
    await s.call<void>((cb) => s.sftp.close(handle, cb)).catch(() => {});
  }
}

/** Renames `part` to `file`, replacing it: atomically with posix-rename, else remove then rename. */
async function replace(s: Session, part: string, file: string): Promise<void> {
  try {
    await s.call<void>((cb) => s.sftp.ext_openssh_rename(part, file, cb));
    return;
  } catch (err) {
    // Without posix-rename only the plain rename is left, which refuses to replace a file.
    if (!unsupported(err)) throw err;
  }
  await s.call<void>((cb) => s.sftp.unlink(file, (err) => cb(err && !isMissing(err) ? err : undefined)));
  await s.call<void>((cb) => s.sftp.rename(part, file, cb));
}

/** Why a call failed, in words, never with the key. */
function describeError(err: unknown, options: SftpBackupStoreOptions): string {
  if (err instanceof HostKeyMismatch)
    return `the server's host key ${err.offered} does not match the pinned one (VRP_BACKUP_SFTP_HOST_KEY)`;
  const e = err instanceof Error ? err : new Error(String(err));
  const code = 'code' in e ? e.code : undefined;
  const level = 'level' in e ? e.level : undefined;
  if (level === 'client-authentication' || /authentication methods failed/i.test(e.message))
    return `the server did not accept the key for user ${options.username} (authentication failed)`;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET') return 'the connection was reset';
  if (code === 'ETIMEDOUT' || /timed out/i.test(e.message))
    return `no answer within ${Math.round((options.readyTimeoutMs ?? 20_000) / 1000)} s`;
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'host unreachable';
  if (code === 3) return 'permission denied';
  if (code === SSH_FX_NO_SUCH_FILE) return 'no such file';
  if (/No response from server|Not connected|No SFTP connection|Unexpected (end|close)/i.test(e.message))
    return 'the connection was lost';
  return systemCause(err) ?? e.message.replace(/^\w+: /, '');
}
