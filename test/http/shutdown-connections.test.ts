/**
 * Closing the app waits for the requests in flight, not for connections without one
 * (src/http/plugins/shutdown.ts): Node's server.close() would wait out its headers timeout
 * (60 s, checked every 30 s) for a connection that sent no request, or part of one.
 *
 * setTimeout is mocked once the app listens: the 1 s grace of a connection that carried no
 * request passes only when a test ticks it, so "closed by the grace" and "closed at once,
 * without the grace" are told apart by the ticks, not by how long closing took.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/http/app.ts';
import { API, BASE, createTestApp } from '../helpers/app.ts';
import { waitUntil } from '../helpers/budget.ts';
import { promiseState } from '../helpers/promise-state.ts';

type Timers = TestContext['mock']['timers'];

/**
 * The app listening on loopback, with setTimeout mocked from then on; `body` gets it, its port
 * and the timers to tick, and everything is closed after (on real timers).
 */
async function withListeningApp(
  tc: TestContext,
  body: (app: FastifyInstance, port: number, timers: Timers) => Promise<void>,
): Promise<void> {
  const t = await createTestApp();
  const app = buildApp(t.ctx, { logger: false });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    tc.mock.timers.enable({ apis: ['setTimeout'] });
    await body(app, (app.server.address() as { port: number }).port, tc.mock.timers);
  } finally {
    tc.mock.timers.reset();
    // A test that failed may have left a connection its grace (now unticked) would have closed.
    for (const socket of opened) socket.destroy();
    opened.clear();
    await app.close();
    await t.close();
  }
}

const opened = new Set<Socket>();

/** A raw connection to the port, and what it received until the server closed it. */
async function open(
  port: number,
): Promise<{ socket: Socket; received: () => string; closed: Promise<void>; isClosed: () => boolean }> {
  const socket = connect(port, '127.0.0.1');
  opened.add(socket);
  let received = '';
  socket.on('data', (d) => {
    received += d;
  });
  let isClosed = false;
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      isClosed = true;
      resolve();
    }),
  );
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return { socket, received: () => received, closed, isClosed: () => isClosed };
}

describe('closing the app with connections open', () => {
  test('a connection that sent nothing, or part of its headers, is closed after its grace, not waited for', async (tc) => {
    await withListeningApp(tc, async (app, port, timers) => {
      const silent = await open(port);
      const partial = await open(port);
      partial.socket.write(`GET ${API}/version HTTP/1.1\r\nHost: x\r\n`);
      const closing = app.close();
      // Closing has begun (its first step gives each connection its grace) once the server
      // stopped listening; no timer is ticked yet, so nothing was closed by the grace.
      await waitUntil('the server to stop listening', () => !app.server.listening);
      assert.equal(silent.isClosed() || partial.isClosed(), false, 'not closed before the grace');
      timers.tick(1000);
      await waitUntil(
        'both connections to be closed once the grace ran out',
        () => silent.isClosed() && partial.isClosed(),
      );
      await closing;
      assert.equal(silent.received(), '');
      assert.equal(partial.received(), '');
    });
  });

  test('a connection made before closing that sends its request during the grace gets the 503, then is closed', async (tc) => {
    await withListeningApp(tc, async (app, port) => {
      const early = await open(port);
      const closing = app.close();
      // No timer is ticked: the grace never runs out, the request is sure to come within it.
      early.socket.write(`GET ${API}/version HTTP/1.1\r\nHost: x\r\nX-Envelope-Variant: B\r\n\r\n`);
      await waitUntil('the answered connection to be closed, with no timer ticked', early.isClosed);
      await closing;
      assert.match(early.received(), /^HTTP\/1\.1 503 /);
      assert.match(early.received(), /\r\nconnection: close\r\n/i);
      assert.match(early.received(), /"error_code":"shutting_down"/);
    });
  });

  test('a kept-alive connection between requests is closed at once', async (tc) => {
    await withListeningApp(tc, async (app, port) => {
      const kept = await open(port);
      kept.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitUntil('the answer', () => /\r\n\r\n\{.*\}$/s.test(kept.received()));
      const closing = app.close();
      // No timer is ticked: closed without the grace of connections that carried no request.
      await waitUntil('the kept-alive connection to be closed, with no timer ticked', kept.isClosed);
      await closing;
      assert.match(kept.received(), /^HTTP\/1\.1 200 /);
    });
  });

  test('a request in flight is answered first; then its connection is closed and close resolves', async (tc) => {
    await withListeningApp(tc, async (app, port, timers) => {
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
      await waitUntil('the server to stop listening', () => !app.server.listening);
      // Far past the grace of a connection without a request: this one is not ended by it.
      timers.tick(60_000);
      assert.equal(await promiseState(closing), 'pending', 'close waits for the request in flight');
      assert.equal(slow.received(), '');
      slow.socket.write(body.slice(10));
      // No further tick: ended after its answer, not given the grace of a connection that carried no request.
      await waitUntil('the connection to be closed after its answer', slow.isClosed);
      await closing;
      assert.match(slow.received(), /^HTTP\/1\.1 401 /, 'the request was answered, not cut');
      assert.match(slow.received(), /"error":"invalid_client"/);
    });
  });
});
