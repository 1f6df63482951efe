import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { HttpMetrics } from '../../metrics.ts';

type Observer = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/** The label of requests no route matched (404, 405): never the raw URL, which would hold ids. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Counts every answer and its latency by method, route pattern and status. Each route gets its
 * own observer when it is registered (its pattern is known then), which keeps the labelled
 * children it has used: prom-client's `labels()` lookup hashes the labels on every call, this
 * is one Map lookup per request.
 */
export const httpMetrics = fp<{ metrics: HttpMetrics }>(
  (app, { metrics }, done) => {
    const observer = (route: string): Observer => {
      const children = new Map<string, (seconds: number) => void>();
      return (request, reply, next) => {
        const key = `${request.method} ${reply.statusCode}`;
        let record = children.get(key);
        if (!record) {
          const status = String(reply.statusCode);
          const count = metrics.requests.labels(request.method, route, status);
          const latency = metrics.duration.labels(request.method, route, status);
          record = (seconds) => {
            count.inc();
            latency.observe(seconds);
          };
          children.set(key, record);
        }
        record(reply.elapsedTime / 1000);
        next();
      };
    };
    app.addHook('onRoute', (route) => {
      route.onResponse = [...[route.onResponse ?? []].flat(), observer(route.url)];
    });
    // Requests no route matched have no route hooks; this one counts them (and only them).
    const unmatched = observer(UNMATCHED_ROUTE);
    app.addHook('onResponse', (request, reply, next) => {
      if (request.is404) return unmatched(request, reply, next);
      next();
    });
    done();
  },
  { name: 'vrp-metrics' },
);
