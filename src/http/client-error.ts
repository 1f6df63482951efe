import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
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

/**
 * Answers a request Node's HTTP parser refused (bad request line, oversized headers, timeout)
 * before Fastify saw it. Its headers were not read, so the variant is B; it still carries an
 * error_code and an X-Request-Id, like every other answer.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const apiError = describeClientError(err);
    const body = JSON.stringify(errorEnvelope('B', apiError.message, apiError.code));
    socket.write(
      `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
