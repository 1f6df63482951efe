import { randomUUID } from 'node:crypto';
import { IncomingMessage, METHODS, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError } from '../domain/errors.ts';
import { errorEnvelope } from './envelope.ts';

/** What Node's HTTP parser refused, as our error: status, code and a message a client can act on. */
function describeClientError(err: NodeJS.ErrnoException): ApiError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new ApiError('request_timeout', 'The request did not arrive in time');
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return new ApiError('headers_too_large', 'The request line and headers are larger than allowed');
  return new ApiError('validation_failed', 'The request is not valid HTTP/1.1');
}

/** What Node tells of a parse error: the chunk it was parsing, and how far into it the error was. */
interface ParseError extends NodeJS.ErrnoException {
  rawPacket?: Buffer;
  bytesParsed?: number;
}

const REQUEST_START = new RegExp(`^(?:${METHODS.join('|')}) `);

/**
 * Whether the refused request may be a HEAD, whose answer has no body: bytes after the head of
 * an answer to HEAD would be read as the next answer. Node gives only the chunk it was parsing,
 * so the method is known when the request's head was read (the error is in its body), or when
 * that chunk begins the request (the connection's first chunk, or one that starts with a
 * method); otherwise, or after a request that ended in the same chunk, it may be a HEAD.
 */
function mayBeHead(err: ParseError, socket: Socket): boolean {
  // Node's parser of the connection (not a public field): the request it is reading, if any.
  const parser: unknown = Reflect.get(socket, 'parser');
  const held = typeof parser === 'object' && parser !== null ? Reflect.get(parser, 'incoming') : undefined;
  const incoming = held instanceof IncomingMessage ? held : undefined;
  if (incoming && !incoming.complete) return incoming.method === 'HEAD';
  if (incoming) return true;
  const chunk = err.rawPacket;
  // A timeout: on a connection that sent nothing there is no request to be a HEAD.
  if (!chunk) return socket.bytesRead > 0;
  if (chunk.subarray(0, err.bytesParsed ?? chunk.length).includes('\r\n\r\n')) return true;
  const start = chunk.toString('latin1', 0, 32);
  const beginsRequest = socket.bytesRead === chunk.length || REQUEST_START.test(start);
  return !beginsRequest || start.startsWith('HEAD ');
}

/**
 * Answers a request Node's HTTP parser refused (bad request line, oversized headers, timeout)
 * before Fastify saw it. Its headers were not read, so the variant is B; it still carries an
 * error_code and an X-Request-Id, like every other answer, except where the request may be a
 * HEAD: then the status and headers alone, with no body.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const apiError = describeClientError(err);
    const status = `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\n`;
    const tail = `X-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n`;
    if (mayBeHead(err, socket)) {
      socket.write(`${status}Content-Length: 0\r\n${tail}`);
    } else {
      const body = JSON.stringify(errorEnvelope('B', apiError.message, apiError.code));
      socket.write(
        `${status}Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${tail}${body}`,
      );
    }
  }
  socket.destroy(err);
}
