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
import { API, BASE, createTestApp } from '../helpers/app.ts';

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
  test('a connection that sent nothing, or part of its headers, is closed after its grace, not waited for', async () => {
    await withListeningApp(async (app, port) => {
      const silent = await open(port);
      const partial = await open(port);
      partial.socket.write(`GET ${API}/version HTTP/1.1\r\nHost: x\r\n`);
      // Both are open and answered nothing yet.
      assert.equal(await within(silent.closed, 100), 'pending');
      const started = Date.now();
      await app.close();
      await Promise.all([silent.closed, partial.closed]);
      // The grace of a connection that carried no request yet is 1 s; the headers timeout, 60 s.
      assert.ok(Date.now() - started < 10_000, `close took ${Date.now() - started} ms`);
      assert.equal(silent.received(), '');
      assert.equal(partial.received(), '');
    });
  });

  test('a connection made before closing that sends its request during the grace gets the 503, then is closed', async () => {
    await withListeningApp(async (app, port) => {
      const early = await open(port);
      const closing = app.close();
      early.socket.write(`GET ${API}/version HTTP/1.1\r\nHost: x\r\nX-Envelope-Variant: B\r\n\r\n`);
      await closing;
      await early.closed;
      assert.match(early.received(), /^HTTP\/1\.1 503 /);
      assert.match(early.received(), /\r\nconnection: close\r\n/i);
      assert.match(early.received(), /"error_code":"shutting_down"/);
    });
  });

  test('a kept-alive connection between requests is closed at once', async () => {
    await withListeningApp(async (app, port) => {
      const kept = await open(port);
      kept.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitUntil(() => /\r\n\r\n\{.*\}$/s.test(kept.received()), 'the answer');
      const started = Date.now();
      await app.close();
      await kept.closed;
      // Well within the 1 s grace of connections that carried no request.
      assert.ok(Date.now() - started < 900, `close took ${Date.now() - started} ms`);
      assert.match(kept.received(), /^HTTP\/1\.1 200 /);
    });
  });

  test('a request in flight is answered first; then its connection is closed and close resolves', async () => {
    await withListeningApp(async (app, port) => {
      const body = JSON.stringify({ grant_type: 'client_credentials', client_id: 'x', client_secret: 'y' });
      const parsed = new Promise((resolve) => app.server.once('request', resolve));
      const slow = await open(port);
      // The headers and half the body: the token endpoint waits for the rest.
      slow.socket.write(
        `POST ${BASE}/oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
      );
      // The request has reached the app (its headers are parsed) before closing begins.
      await parsed;
      const closing = app.close();
      assert.equal(await within(closing, 300), 'pending', 'close waits for the request in flight');
      assert.equal(slow.received(), '');
      slow.socket.write(body.slice(10));
      const answered = Date.now();
      await closing;
      await slow.closed;
      // Ended after its answer, not given the grace of a connection that carried no request.
      assert.ok(Date.now() - answered < 900, `closed ${Date.now() - answered} ms after the answer`);
      assert.match(slow.received(), /^HTTP\/1\.1 401 /, 'the request was answered, not cut');
      assert.match(slow.received(), /"error":"invalid_client"/);
    });
  });
});

async function waitUntil(condition: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 5000; !condition(); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
