import { inspect } from 'node:util';

/**
 * A failure the operator fixes from its message alone (a bad setting, a store out of reach, a
 * port in use, a data directory that cannot be used): processes print it as one line without a
 * stack and exit with `exitCode`. Anything else is unexpected and keeps its stack.
 */
export class ExpectedFailure extends Error {
  override name = 'ExpectedFailure';
  readonly exitCode: number;

  constructor(message: string, options: { exitCode?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.exitCode = options.exitCode ?? 1;
  }
}

/** The one line and exit code of an expected failure; undefined for anything else. */
export function expectedFailure(
  err: unknown,
): { readonly message: string; readonly exitCode: number } | undefined {
  if (err instanceof ExpectedFailure) return { message: err.message, exitCode: err.exitCode };
  return undefined;
}

/**
 * The one place a failure that ends a process is printed (the server, a worker, every `vrp`
 * command): `vrp: <message>` on one line for an expected failure, the whole error with its
 * stack (and its `cause`'s) for anything else. Answers the exit code.
 */
export function reportFailure(
  err: unknown,
  write: (text: string) => void = (t) => process.stderr.write(t),
): number {
  const expected = expectedFailure(err);
  if (expected) {
    write(`vrp: ${expected.message.replace(/\s*\n\s*/g, ' ')}\n`);
    return expected.exitCode;
  }
  // inspect, not .stack: the stack of the `cause` (a driver's error under ours) says what went wrong.
  write(`vrp: unexpected failure (please report it): ${inspect(err)}\n`);
  return 1;
}

/** What an operating system error code means, in words, for the one-line messages. */
const SYSTEM_CAUSES: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOTDIR: 'not a directory',
  EEXIST: 'not a directory',
  EISDIR: 'is a directory',
  ENOENT: 'no such file or directory',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'address not available on this machine',
  ENOTFOUND: 'unknown host',
  EAI_AGAIN: 'host name lookup failed',
  EAI_FAIL: 'host name lookup failed',
  EAI_NONAME: 'unknown host',
};

/** The words for a system error's code (EACCES -> "permission denied"), or undefined when it is not one we know. */
export function systemCause(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  return typeof code === 'string' ? SYSTEM_CAUSES[code] : undefined;
}
