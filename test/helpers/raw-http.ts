/**
 * HTTP/1.1 written byte by byte over a loopback socket, for requests that no client library
 * would send (bad request targets, raw non-ASCII bytes, oversized heads): Node's own HTTP
 * parser sees them before the framework does, which `app.inject()` skips.
 */
import { connect } from 'node:net';
import { WAIT_MS } from './budget.ts';
import type { FuzzResponse } from './fuzz-checks.ts';

function decodeChunked(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = Number.parseInt(body.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(body.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** Parses what the server wrote on a connection it then closed. */
export function parseRawResponse(bytes: Buffer): FuzzResponse {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no complete response head in ${JSON.stringify(bytes.toString('latin1'))}`);
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!m) throw new Error(`not an HTTP status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = bytes.subarray(end + 4);
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') body = decodeChunked(body);
  else if (headers['content-length'] !== undefined)
    body = body.subarray(0, Number(headers['content-length']));
  return { status: Number(m[1]), headers, body: body.toString('utf8') };
}

/**
 * Sends `head` (request line and headers, without the blank line) and `body` from the loopback
 * address `from`; reads until the server closes.
 */
export function rawRequest(
  port: number,
  from: string,
  head: Buffer,
  body: Buffer,
  timeoutMs = WAIT_MS,
): Promise<FuzzResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (err) => {
      // A server may reset the connection after answering a request it refused.
      if (chunks.length === 0) {
        clearTimeout(timer);
        reject(err);
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve(parseRawResponse(Buffer.concat(chunks)));
      } catch (err) {
        reject(err);
      }
    });
    socket.write(Buffer.concat([head, Buffer.from('\r\n\r\n'), body]));
  });
}
