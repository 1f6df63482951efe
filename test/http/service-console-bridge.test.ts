/**
 * The bridge between a browser's WebSocket and a VM's console, on its own: keystrokes typed
 * before the console is connected, a console that cannot be opened, one that fails or ends, a
 * socket that fails, a session check that fails, and a socket closed before the console opened.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { type Duplex, PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import {
  bridgeConsole,
  CLOSE_SERVICE_LEFT,
  type ConsoleCheck,
  type ConsoleSocket,
} from '../../src/http/service-console/bridge.ts';
import { consolePage, refusalPage } from '../../src/http/service-console/page.ts';
import { silentLog } from '../helpers/silent-log.ts';

const OPEN = 1;
const CLOSED = 3;

/** A WebSocket's server side as the bridge uses it: what was sent, how it was closed. */
function fakeSocket() {
  const events = new EventEmitter();
  const sent: Buffer[] = [];
  /** The bridge's pauses and resumes of the browser's side, in order. */
  const reading: string[] = [];
  let closed: { code: number; reason: string } | undefined;
  let onClosed: () => void = () => {};
  const whenClosed = new Promise<{ code: number; reason: string }>((resolve) => {
    onClosed = () => resolve(closed!);
  });
  const socket: ConsoleSocket & { readyState: number } = {
    readyState: OPEN,
    OPEN,
    CONNECTING: 0,
    bufferedAmount: 0,
    send: (data, _options, done) => {
      sent.push(Buffer.from(data));
      done?.();
    },
    pause() {
      reading.push('pause');
    },
    resume() {
      reading.push('resume');
    },
    close(code, reason) {
      socket.readyState = CLOSED;
      closed = { code, reason };
      onClosed();
    },
    on: (event: string, listener: (...args: any[]) => void) => {
      events.on(event, listener);
    },
  };
  return { socket, events, sent, whenClosed, reading };
}

const clock = { now: () => 0 };
const never: ConsoleCheck = async () => undefined;

function bridge(o: {
  socket: ConsoleSocket;
  open: () => Promise<Duplex>;
  check?: ConsoleCheck;
  pollMs?: number;
  sessionUntil?: number;
}) {
  bridgeConsole({
    socket: o.socket,
    kind: 'serial',
    open: o.open,
    check: o.check ?? never,
    pollMs: o.pollMs ?? 60_000,
    clock,
    sessionUntil: o.sessionUntil ?? 3_600_000,
    log: silentLog,
  });
}

describe('console bridge', () => {
  test('keystrokes typed before the console opened reach it, in order; its output reaches the socket', async () => {
    const s = fakeSocket();
    let release: (d: Duplex) => void = () => {};
    bridge({ socket: s.socket, open: () => new Promise<Duplex>((r) => (release = r)) });
    s.events.emit('message', Buffer.from('ro'));
    s.events.emit('message', [Buffer.from('o'), Buffer.from('t')]);
    s.events.emit('message', new Uint8Array([13]).buffer);
    // The console's side: what the guest receives, and what it shows.
    const typed: Buffer[] = [];
    const guest = new (class extends PassThrough {
      override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void) {
        typed.push(chunk);
        done();
      }
    })();
    release(guest);
    await new Promise((r) => setImmediate(r));
    assert.equal(Buffer.concat(typed).toString(), 'root\r');
    guest.push('login: ');
    await new Promise((r) => setImmediate(r));
    assert.equal(Buffer.concat(s.sent).toString(), 'login: ');
    guest.destroy();
    assert.equal((await s.whenClosed).code, 1000);
  });

  test('past 1 MiB typed before the console is connected, the browser is not read until it is; then all of it reaches the console', async () => {
    const s = fakeSocket();
    let release!: (d: Duplex) => void;
    bridge({ socket: s.socket, open: () => new Promise<Duplex>((r) => (release = r)) });
    const chunk = Buffer.alloc(256 * 1024, 0x61);
    for (let i = 0; i < 4; i++) s.events.emit('message', chunk);
    assert.deepEqual(s.reading, [], 'up to 1 MiB is kept');
    s.events.emit('message', chunk);
    assert.deepEqual(s.reading, ['pause']);
    let taken = 0;
    const guest = new (class extends PassThrough {
      override _write(data: Buffer, _enc: BufferEncoding, done: () => void) {
        taken += data.length;
        done();
      }
    })({ highWaterMark: 8 * 1024 * 1024 });
    release(guest);
    await new Promise((r) => setImmediate(r));
    assert.equal(taken, 5 * chunk.length);
    assert.deepEqual(s.reading, ['pause', 'resume']);
    guest.destroy();
    await s.whenClosed;
  });

  test('a console that cannot be opened closes the socket with 1011', async () => {
    const s = fakeSocket();
    bridge({ socket: s.socket, open: async () => Promise.reject(new Error('host down')) });
    assert.deepEqual(await s.whenClosed, { code: 1011, reason: 'The console could not be reached' });
  });

  test('a console that fails closes the socket with 1011; one that ends, with 1000', async () => {
    const failing = fakeSocket();
    const broken = new PassThrough();
    bridge({ socket: failing.socket, open: async () => broken });
    await new Promise((r) => setImmediate(r));
    broken.destroy(new Error('pty gone'));
    assert.deepEqual(await failing.whenClosed, { code: 1011, reason: 'The console connection failed' });

    const ending = fakeSocket();
    const ends = new PassThrough();
    bridge({ socket: ending.socket, open: async () => ends });
    await new Promise((r) => setImmediate(r));
    ends.end();
    ends.resume();
    assert.deepEqual(await ending.whenClosed, { code: 1000, reason: 'The console closed' });
  });

  test('a socket that fails ends the console; a socket closed before the console opened never uses it', async () => {
    const s = fakeSocket();
    const stream = new PassThrough();
    bridge({ socket: s.socket, open: async () => stream });
    await new Promise((r) => setImmediate(r));
    s.events.emit('error', new Error('reset'));
    assert.equal((await s.whenClosed).code, 1011);
    assert.ok(stream.destroyed, 'the console connection is closed on the host');

    const early = fakeSocket();
    const late = new PassThrough();
    let release: (d: Duplex) => void = () => {};
    bridge({ socket: early.socket, open: () => new Promise<Duplex>((r) => (release = r)) });
    early.socket.readyState = CLOSED;
    early.events.emit('close');
    release(late);
    await new Promise((r) => setImmediate(r));
    assert.ok(late.destroyed, 'opened after the browser left: closed at once');
  });

  test('the session check: a failing check is logged and the session goes on; one that says end closes it', async () => {
    const s = fakeSocket();
    let calls = 0;
    bridge({
      socket: s.socket,
      open: async () => new PassThrough(),
      pollMs: 5,
      check: async () => {
        calls++;
        if (calls === 1) throw new Error('store busy');
        if (calls < 3) return undefined;
        return { code: CLOSE_SERVICE_LEFT, reason: 'The server is suspended now' };
      },
    });
    assert.deepEqual(await s.whenClosed, { code: CLOSE_SERVICE_LEFT, reason: 'The server is suspended now' });
    assert.ok(calls >= 3);
  });
});

describe('console page', () => {
  test('a tab per console, the serial one first and shown; with none listed, the serial one all the same', () => {
    const page = (kinds: readonly ('serial' | 'vnc')[]) =>
      consolePage({ assets: '/a', domain: 'x.example.com', kinds, sessionUntil: '2026-01-01T00:00:00Z' })
        .text;
    const both = page(['serial', 'vnc']);
    assert.match(both, /id="tab-serial"[^>]*aria-selected="true">Serial console</);
    assert.match(both, /id="tab-vnc"[^>]*aria-selected="false">Screen</);
    assert.match(both, /id="pane-vnc" role="tabpanel" aria-labelledby="tab-vnc" hidden>/);
    const none = page([]);
    assert.match(none, /id="tab-serial"/);
    assert.doesNotMatch(none, /tab-vnc/);
    assert.match(
      refusalPage('Link used', 'Ask for a new one.').text,
      /<p role="alert">Ask for a new one\.<\/p>/,
    );
  });
});
