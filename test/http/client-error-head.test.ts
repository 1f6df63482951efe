/**
 * An answer to HEAD has no body, also when Node's HTTP parser refuses the request (a request
 * line over 16 KB, a broken chunked body): bytes after its head would be read as the next
 * answer. Other methods keep the envelope. Checked on the exact bytes the server writes.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../../src/http/app.ts';
import { API, createTestApp, type TestApp } from '../helpers/app.ts';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** Writes `parts` one after another on one loopback connection; everything the server wrote before it closed. */
function exchange(port: number, parts: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      for (const part of parts) socket.write(part);
    });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    // The server may reset the connection after its answer.
    socket.on('error', (err) => (chunks.length === 0 ? reject(err) : undefined));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

describe('parser errors: no body on an answer to HEAD (real HTTP over loopback)', () => {
  let t: TestApp;
  let port: number;
  const server = { app: undefined as ReturnType<typeof buildApp> | undefined };
  before(async () => {
    t = await createTestApp();
    server.app = buildApp(t.ctx, { logger: false });
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    port = (server.app.server.address() as { port: number }).port;
  });
  after(async () => {
    await server.app?.close();
    await t.close();
  });

  const longTarget = `${API}/version?q=${'a'.repeat(20_000)}`;

  test('HEAD with a request line over 16 KB: 431, its headers, and not one byte more', async () => {
    const text = await exchange(port, [`HEAD ${longTarget} HTTP/1.1\r\nHost: x\r\n\r\n`]);
    assert.match(
      text,
      new RegExp(
        `^HTTP/1\\.1 431 Request Header Fields Too Large\\r\\nContent-Length: 0\\r\\nX-Request-Id: ${UUID}\\r\\nConnection: close\\r\\n\\r\\n$`,
      ),
      JSON.stringify(text.slice(0, 400)),
    );
  });

  test('HEAD whose head comes in two writes: no body either', async () => {
    const head = `HEAD ${longTarget} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const text = await exchange(port, [head.slice(0, 10_000), head.slice(10_000)]);
    assert.match(text, /^HTTP\/1\.1 431 /);
    assert.ok(text.endsWith('\r\n\r\n'), JSON.stringify(text.slice(-200)));
    assert.equal(text.indexOf('\r\n\r\n'), text.length - 4);
  });

  test('HEAD with a broken chunked body: 400, no body', async () => {
    const text = await exchange(port, [
      `HEAD ${API}/version HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n`,
    ]);
    assert.match(
      text,
      new RegExp(
        `^HTTP/1\\.1 400 Bad Request\\r\\nContent-Length: 0\\r\\nX-Request-Id: ${UUID}\\r\\nConnection: close\\r\\n\\r\\n$`,
      ),
      JSON.stringify(text.slice(0, 400)),
    );
  });

  test('GET with the same request line keeps its envelope', async () => {
    const text = await exchange(port, [`GET ${longTarget} HTTP/1.1\r\nHost: x\r\n\r\n`]);
    const [head = '', body = ''] = text.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 431 /);
    assert.match(head, new RegExp(`\\r\\nContent-Length: ${Buffer.byteLength(body)}\\r\\n`));
    assert.equal(JSON.parse(body).error_code, 'headers_too_large');
  });
});
