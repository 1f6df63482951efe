import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../domain/clock.ts';
import type { ConsoleKind } from '../../drivers/driver.ts';

/** WebSocket close codes the page shows the reason of (4000-4999: the application's own). */
export const CLOSE_SESSION_ENDED = 4001;
export const CLOSE_SERVICE_LEFT = 4002;
const CLOSE_NORMAL = 1000;
const CLOSE_ERROR = 1011;

/** What the bridge uses of a `ws` WebSocket (the one @fastify/websocket hands a route). */
export interface ConsoleSocket {
  readonly readyState: number;
  readonly OPEN: number;
  readonly CONNECTING: number;
  send(data: Buffer, options: { binary: boolean }): void;
  close(code: number, reason: string): void;
  on(event: 'message', listener: (data: Buffer | ArrayBuffer | Buffer[]) => void): void;
  on(event: 'close', listener: () => void): void;
  on(event: 'error', listener: (err: Error) => void): void;
}

/** Why a console connection must end now, or undefined while it may go on. */
export type ConsoleCheck = () => Promise<{ code: number; reason: string } | undefined>;

/**
 * Bridges a browser's WebSocket and a VM's console both ways (binary frames: the terminal's
 * bytes, or RFB), until either side closes or `check` (asked every `pollMs`) says it must end.
 * Keystrokes that arrive before the console is connected are kept and sent once it is.
 */
export function bridgeConsole(o: {
  socket: ConsoleSocket;
  kind: ConsoleKind;
  open: () => Promise<Duplex>;
  check: ConsoleCheck;
  pollMs: number;
  clock: Clock;
  sessionUntil: number;
  log: FastifyBaseLogger;
}): void {
  const { socket, log } = o;
  let stream: Duplex | undefined;
  let closed = false;
  const pending: Buffer[] = [];

  const close = (code: number, reason: string) => {
    if (closed) return;
    closed = true;
    clearInterval(poll);
    clearTimeout(deadline);
    stream?.destroy();
    if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING)
      socket.close(code, reason);
    log.info({ kind: o.kind, code, reason }, 'console connection closed');
  };
  const check = () => {
    o.check().then(
      (end) => end && close(end.code, end.reason),
      (err: unknown) => log.warn({ err }, 'console session check failed'),
    );
  };
  const poll = setInterval(check, o.pollMs);
  // On time as well when the session ends between two polls (timers hold at most ~24.8 days).
  const deadline = setTimeout(check, Math.min(Math.max(0, o.sessionUntil - o.clock.now()), 2 ** 31 - 1));

  socket.on('message', (data) => {
    const bytes = Buffer.isBuffer(data)
      ? data
      : Array.isArray(data)
        ? Buffer.concat(data)
        : Buffer.from(data);
    if (stream) stream.write(bytes);
    else pending.push(bytes);
  });
  socket.on('close', () => close(CLOSE_NORMAL, ''));
  socket.on('error', (err) => {
    log.warn({ err }, 'console WebSocket failed');
    close(CLOSE_ERROR, 'The connection failed');
  });

  o.open().then(
    (opened) => {
      if (closed) {
        opened.destroy();
        return;
      }
      stream = opened;
      opened.on('data', (chunk: Buffer) => socket.send(chunk, { binary: true }));
      opened.on('end', () => close(CLOSE_NORMAL, 'The console closed'));
      opened.on('close', () => close(CLOSE_NORMAL, 'The console closed'));
      opened.on('error', (err) => {
        log.warn({ err }, 'console stream failed');
        close(CLOSE_ERROR, 'The console connection failed');
      });
      for (const bytes of pending.splice(0)) opened.write(bytes);
    },
    (err: unknown) => {
      log.warn({ err, kind: o.kind }, 'console could not be opened');
      close(CLOSE_ERROR, 'The console could not be reached');
    },
  );
}
