import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { benchClient } from '../../bench/http-client.ts';

/** A server that answers each POST with what it received, and counts the connections it took. */
async function echoServer() {
  let connections = 0;
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = req.url === '/missing' ? 404 : 201;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          method: req.method,
          length: req.headers['content-length'],
          type: req.headers['content-type'] ?? null,
          auth: req.headers.authorization ?? null,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, server, connections: () => connections };
}

test('the bench client: POSTs its body and headers, reads status and text, keeps its connections', async () => {
  const { url, server, connections } = await echoServer();
  const client = benchClient(2);
  try {
    const body = JSON.stringify({ product_id: 'p-1', ünïcode: 'ç' });
    const a = await client.post(
      `${url}/a`,
      { authorization: 'Bearer t', 'content-type': 'application/json' },
      body,
    );
    assert.equal(a.status, 201);
    assert.equal(a.ok, true);
    assert.deepEqual(JSON.parse(a.text), {
      method: 'POST',
      length: String(Buffer.byteLength(body)),
      type: 'application/json',
      auth: 'Bearer t',
      body,
    });
    // No body: an empty POST, as the create request is.
    const empty = await client.post(`${url}/b`, { authorization: 'Bearer t' });
    assert.deepEqual(JSON.parse(empty.text), {
      method: 'POST',
      length: '0',
      type: null,
      auth: 'Bearer t',
      body: '',
    });
    const missing = await client.post(`${url}/missing`, {});
    assert.equal(missing.status, 404);
    assert.equal(missing.ok, false);
    // Twenty at once over at most two connections, all of them kept open between requests.
    const many = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.post(`${url}/m`, {}, `{"i":${i}}`)),
    );
    assert.deepEqual(
      many.map((m) => JSON.parse(m.text).body),
      Array.from({ length: 20 }, (_, i) => `{"i":${i}}`),
    );
    assert.ok(connections() <= 2, `${connections()} connections`);
  } finally {
    client.close();
    server.close();
  }
});

test('the bench client: a refused connection rejects the request', async () => {
  const { url, server } = await echoServer();
  await new Promise((r) => server.close(r));
  const client = benchClient(1);
  try {
    await assert.rejects(client.post(`${url}/a`, {}, '{}'), { code: 'ECONNREFUSED' });
  } finally {
    client.close();
  }
});
