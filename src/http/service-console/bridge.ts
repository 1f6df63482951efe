import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../domain/clock.ts';
import type { ConsoleKind } from '../../drivers/driver.ts';

/** WebSocket close codes the page shows the reason of (4000-4999: the application's own). */
export const CLOSE_SESSION_ENDED = 4001;
export const CLOSE_SERVICE_LEFT = 4002;
const CLOSE_NORMAL = 1000;
const CLOSE_ERROR = 1011;

/**
 * Bytes queued for the browser (in the WebSocket and its TCP socket) past which the console is
 * not read until they are sent: a console that writes faster than the browser reads (a flood on
 * the serial line, a VNC client that asks and never reads) waits for it, instead of growing the
 * process's memory without bound.
 */
const OUT_HIGH_WATER = 1 << 20;
/** Keystrokes (or RFB) kept while the console is being connected, past which the browser's are not read. */
const IN_PENDING_MAX = 1 << 20;

/** What the bridge uses of a `ws` WebSocket (the one @fastify/websocket hands a route). */
export interface ConsoleSocket {
  readonly readyState: number;
  readonly OPEN: number;
  readonly CONNECTING: number;
  /** Bytes queued to send, not yet handed to the system. */
  readonly bufferedAmount: number;
  /** `done` once the data is handed to the system (or failed to be). */
  send(data: Buffer, options: { binary: boolean }, done?: (err?: Error) => void): void;
  /** Stops and starts reading from the browser. */
  pause(): void;
  resume(): void;
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
 * Keystrokes that arrive before the console is connected are kept and sent once it is. Each way
 * waits for the slower side: the console is not read while the browser has more than
 * OUT_HIGH_WATER bytes to take, the browser not while the console has not taken what it was
 * given.
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
  let pendingBytes = 0;

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
    if (stream) toConsole(stream, bytes);
    else {
      pending.push(bytes);
      pendingBytes += bytes.length;
      if (pendingBytes > IN_PENDING_MAX) socket.pause();
    }
  });
  /** Writes the browser's bytes; while the console has not taken them, the browser waits. */
  let waitingForConsole = false;
  const toConsole = (to: Duplex, bytes: Buffer) => {
    if (to.write(bytes) || waitingForConsole) return;
    waitingForConsole = true;
    socket.pause();
    to.once('drain', () => {
      waitingForConsole = false;
      if (!closed) socket.resume();
    });
  };
  /** The browser took some of what it was sent: the console is read again once it took most. */
  const sent = () => {
    if (!closed && stream?.isPaused() && socket.bufferedAmount <= OUT_HIGH_WATER / 2) stream.resume();
  };
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
      opened.on('data', (chunk: Buffer) => {
        socket.send(chunk, { binary: true }, sent);
        if (socket.bufferedAmount > OUT_HIGH_WATER) opened.pause();
      });
      opened.on('end', () => close(CLOSE_NORMAL, 'The console closed'));
      opened.on('close', () => close(CLOSE_NORMAL, 'The console closed'));
      opened.on('error', (err) => {
        log.warn({ err }, 'console stream failed');
        close(CLOSE_ERROR, 'The console connection failed');
      });
      for (const bytes of pending.splice(0)) toConsole(opened, bytes);
      pendingBytes = 0;
      // Read again if too much was kept meanwhile, unless the console now makes the browser wait.
      if (!waitingForConsole) socket.resume();
    },
    (err: unknown) => {
      log.warn({ err, kind: o.kind }, 'console could not be opened');
      close(CLOSE_ERROR, 'The console could not be reached');
    },
  );
}
