/**
 * The console bridge over a real WebSocket (@fastify/websocket, as the service console route
 * has it) and a raw TCP client that stops reading or stops being read: each way waits for the
 * slower side, so that neither a console that floods (a serial line written as fast as the
 * guest can, a VNC client that asks and never reads) nor a browser that sends faster than the
 * console takes grows the process's memory, and nothing is lost once both go on.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { after, before, test } from 'node:test';
import websocket from '@fastify/websocket';
import Fastify from 'fastify';
import { bridgeConsole, type ConsoleSocket } from '../../src/http/service-console/bridge.ts';
import { waitUntil } from '../helpers/budget.ts';
import { silentLog } from '../helpers/silent-log.ts';

const MiB = 1 << 20;

/** A console that gives output as fast as it is read (none if `quiet`), and takes input only while not held. */
function console_(quiet = false) {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const c = {
    produced: 0,
    taken: 0,
    held: false,
    waiting: [] as (() => void)[],
    release() {
      c.held = false;
      for (const done of c.waiting.splice(0)) done();
    },
    stream: new Duplex({
      read() {
        if (quiet) return;
        c.produced += chunk.length;
        // A turn of the event loop per chunk, as a pipe's reads take: the test's checks run.
        setImmediate(() => this.push(chunk));
      },
      write(data: Buffer, _encoding, done) {
        c.taken += data.length;
        if (c.held) c.waiting.push(() => done());
        else done();
      },
    }),
  };
  return c;
}

let current = console_();
/** The server's side of the last connection (a `ws` WebSocket). */
let serverSocket: (ConsoleSocket & { readonly isPaused: boolean }) | undefined;
const app = Fastify();
let port = 0;

before(async () => {
  await app.register(websocket);
  app.get('/ws', { websocket: true }, (socket) => {
    serverSocket = socket;
    bridgeConsole({
      socket,
      kind: 'serial',
      open: async () => current.stream,
      check: async () => undefined,
      pollMs: 60_000,
      clock: { now: () => 0 },
      sessionUntil: 3_600_000,
      log: silentLog,
    });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
});
after(() => app.close());

/** A WebSocket client on a raw socket: the upgrade written, nothing read until the test says. */
async function rawClient(): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(
    'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  socket.pause();
  return socket;
}

/** A binary frame as a browser sends it (masked), `payload` at most 65,535 bytes. */
function clientFrame(payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i]! ^= mask[i % 4]!;
  const header = Buffer.from([0x82, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  return Buffer.concat([header, mask, masked]);
}

test('a console that writes faster than the browser reads is not read until the browser catches up', async () => {
  current = console_();
  const c = current;
  const client = await rawClient();
  try {
    await waitUntil('the console to be read no more, or 64 MiB of it read', () =>
      c.stream.isPaused() || c.produced > 64 * MiB ? true : undefined,
    );
    assert.ok(c.stream.isPaused(), 'the console is waiting for the browser');
    assert.ok(c.produced < 64 * MiB, `${c.produced} bytes read of the console while the browser read none`);
    // The browser reads again: so is the console.
    const before = c.produced;
    let got = 0;
    client.on('data', (b: Buffer) => {
      got += b.length;
    });
    client.resume();
    await waitUntil(
      'the console to be read again, and the browser to get it',
      () => (c.produced > before + 16 * MiB && got > 16 * MiB) || undefined,
    );
  } finally {
    client.destroy();
  }
});

test('a browser that sends faster than the console takes is not read until the console catches up; nothing is lost', async () => {
  current = console_(true);
  const c = current;
  c.held = true;
  const client = await rawClient();
  client.resume(); // the server's answers are read (and ignored)
  try {
    await waitUntil('the upgrade', () => serverSocket?.readyState === 1 || undefined);
    const payload = Buffer.alloc(60_000, 0x62);
    const frames = 400;
    for (let i = 0; i < frames; i++) client.write(clientFrame(payload));
    const sent = frames * payload.length;
    // Given to the console: what it took, and what waits in its stream's buffer for it.
    const given = () => c.taken + c.stream.writableLength;
    await waitUntil('the browser to be read no more, or 16 MiB of it given to the console', () =>
      serverSocket!.isPaused || given() > 16 * MiB ? true : undefined,
    );
    assert.ok(given() < 16 * MiB, `${given()} bytes given to a console that took one write`);
    assert.ok(serverSocket!.isPaused, 'the browser is waiting for the console');
    c.release();
    await waitUntil('every byte the browser sent to reach the console', () => c.taken === sent || undefined);
    assert.equal(c.taken, sent);
  } finally {
    client.destroy();
  }
});
