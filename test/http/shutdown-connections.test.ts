/**
 * Closing the app waits for the requests in flight, not for connections without one
 * (src/http/plugins/shutdown.ts): Node's server.close() would wait out its headers timeout
 * (60 s, checked every 30 s) for a connection that sent no request, or part of one.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/http/app.ts';
import { BASE, createTestApp } from '../helpers/app.ts';

/** The app listening on loopback; `body` gets it and its port, and everything is closed after. */
async function withListeningApp(body: (app: FastifyInstance, port: number) => Promise<void>): Promise<void> {
  const t = await createTestApp();
  const app = buildApp(t.ctx, { logger: false });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    await body(app, (app.server.address() as { port: number }).port);
  } finally {
    await app.close();
    await t.close();
  }
}

/** A raw connection to the port, and what it received until the server closed it. */
async function open(
  port: number,
): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (d) => {
    received += d;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return { socket, received: () => received, closed };
}

/** Settles with 'pending' if `promise` has not settled within `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms))]);
}

describe('closing the app with connections open', () => {
  test('a connection that sent nothing, or part of its headers, is closed and not waited for', async () => {
    await withListeningApp(async (app, port) => {
      const silent = await open(port);
      const partial = await open(port);
      partial.socket.write(`GET ${BASE}/api/version HTTP/1.1\r\nHost: x\r\n`);
      // Both are open and answered nothing yet.
      assert.equal(await within(silent.closed, 100), 'pending');
      const started = Date.now();
      await app.close();
      await Promise.all([silent.closed, partial.closed]);
      assert.ok(Date.now() - started < 10_000, `close took ${Date.now() - started} ms`);
      assert.equal(silent.received(), '');
      assert.equal(partial.received(), '');
    });
  });

  test('a request in flight is answered first; then its connection is closed and close resolves', async () => {
    await withListeningApp(async (app, port) => {
      const body = JSON.stringify({ grant_type: 'client_credentials', client_id: 'x', client_secret: 'y' });
      const slow = await open(port);
      // The headers and half the body: the token endpoint waits for the rest.
      slow.socket.write(
        `POST ${BASE}/oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
      );
      // The request has reached the app (its headers are parsed) before closing begins.
      await new Promise((r) => setTimeout(r, 100));
      const closing = app.close();
      assert.equal(await within(closing, 300), 'pending', 'close waits for the request in flight');
      assert.equal(slow.received(), '');
      slow.socket.write(body.slice(10));
      await closing;
      await slow.closed;
      assert.match(slow.received(), /^HTTP\/1\.1 401 /, 'the request was answered, not cut');
      assert.match(slow.received(), /"error":"invalid_client"/);
    });
  });
});
