import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyPluginCallback } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../domain/errors.ts';

/**
 * How long, once the app closes, a connection that has carried no request yet may take to send
 * one (it gets the 503 below) before it is closed.
 */
const UNSERVED_GRACE_MS = 1000;

/** A connection of the server: its requests in flight, and whether it has carried one. */
interface Connection {
  inFlight: number;
  served: boolean;
}

/**
 * Once the app starts closing, requests still arriving get 503 `shutting_down` and
 * `Connection: close`, so the client sends them again to another process.
 *
 * Closing waits for the requests in flight, not for connections without one. Node's
 * `server.close()` ends kept-alive connections between requests, but not one that has sent no
 * request yet, or only part of its headers (a client that connected ahead of time, a port
 * check, a slow or hostile client): for those it waits for the headers timeout, 60 s checked
 * every 30 s, longer than `vrp serve` gives its whole shutdown, so the jobs would never get
 * their grace period. Here, once closing begins:
 * - a connection between requests is ended at once;
 * - one that has carried no request yet (or opens meanwhile) gets UNSERVED_GRACE_MS to send
 *   one, which is answered with the 503, then is ended;
 * - one with a request in flight is ended after its answer.
 * The server speaks plain HTTP (TLS ends at the reverse proxy: docs/operations.md), so the
 * socket of `connection` is the socket of its requests.
 *
 * The preClose hook is added to `app` now, not when the returned plugin loads: it must be the
 * first preClose hook, so requests arriving while later ones run are refused too.
 */
export function shutdownGate(app: FastifyInstance): FastifyPluginCallback {
  let closing = false;
  const connections = new Map<Socket, Connection>();
  const endIfIdle = (socket: Socket) => {
    if (socket.destroyed || (connections.get(socket)?.inFlight ?? 0) > 0) return;
    socket.end(() => socket.destroy());
  };
  /** What closing does with a connection when it begins, when it opens, or when it is answered. */
  const settle = (socket: Socket) => {
    const c = connections.get(socket);
    if (!c || c.inFlight > 0) return;
    if (c.served) endIfIdle(socket);
    else setTimeout(() => endIfIdle(socket), UNSERVED_GRACE_MS).unref();
  };
  app.server.on('connection', (socket: Socket) => {
    connections.set(socket, { inFlight: 0, served: false });
    socket.once('close', () => connections.delete(socket));
    if (closing) settle(socket);
  });
  app.server.on('request', (request, response) => {
    const c = connections.get(request.socket);
    if (!c) return;
    c.inFlight += 1;
    c.served = true;
    response.once('close', () => {
      c.inFlight -= 1;
      if (closing) settle(request.socket);
    });
  });
  app.addHook('preClose', (done) => {
    closing = true;
    for (const socket of connections.keys()) settle(socket);
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
