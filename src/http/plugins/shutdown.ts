import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyPluginCallback } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../domain/errors.ts';

/**
 * How long a connection opened while the app closes may stay without a request in flight
 * before it is closed.
 */
const LATE_IDLE_MS = 1000;

/**
 * Once the app starts closing, requests still arriving (on kept-alive connections) get 503
 * `shutting_down` and `Connection: close`, so the client sends them again to another process.
 *
 * Closing waits for the requests in flight, not for connections without one. Node's
 * `server.close()` ends kept-alive connections between requests, but not one that has sent no
 * request yet, or only part of its headers (a client that connected ahead of time, a port
 * check, a slow or hostile client): for those it waits for the headers timeout, 60 s checked
 * every 30 s, longer than `vrp serve` gives its whole shutdown, so the jobs would never get
 * their grace period. Here such a connection is closed when closing begins; one opened while
 * the app closes is given LATE_IDLE_MS; a connection whose last request in flight is answered
 * while the app closes is ended after the answer.
 *
 * The preClose hook is added to `app` now, not when the returned plugin loads: it must be the
 * first preClose hook, so requests arriving while later ones run are refused too.
 */
export function shutdownGate(app: FastifyInstance): FastifyPluginCallback {
  let closing = false;
  /** Every open connection of the server, and how many of its requests are in flight. */
  const inFlight = new Map<Socket, number>();
  const endIfIdle = (socket: Socket) => {
    if ((inFlight.get(socket) ?? 0) === 0) socket.end(() => socket.destroy());
  };
  app.server.on('connection', (socket: Socket) => {
    inFlight.set(socket, 0);
    socket.once('close', () => inFlight.delete(socket));
    if (closing) setTimeout(() => endIfIdle(socket), LATE_IDLE_MS).unref();
  });
  app.server.on('request', (request, response) => {
    const socket = request.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    response.once('close', () => {
      if (!inFlight.has(socket)) return;
      inFlight.set(socket, (inFlight.get(socket) ?? 1) - 1);
      if (closing) endIfIdle(socket);
    });
  });
  app.addHook('preClose', (done) => {
    closing = true;
    for (const socket of inFlight.keys()) endIfIdle(socket);
    done();
  });
  return fp(
    (scope, _options, done) => {
      scope.addHook('onRequest', (_request, _reply, next) => {
        if (!closing) return next();
        next(
          new ApiError('shutting_down', 'The server is shutting down; send the request again', {
            headers: { connection: 'close', 'retry-after': '1' },
          }),
        );
      });
      done();
    },
    { name: 'vrp-shutdown' },
  );
}
