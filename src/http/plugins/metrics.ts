import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { HttpMetrics } from '../../metrics.ts';

type Observe = ReturnType<HttpMetrics['duration']['labels']>;
type Observer = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/** The label of requests no route matched (404, 405): never the raw URL, which would hold ids. */
const UNMATCHED_ROUTE = 'unmatched';

/**
 * Records every answer's latency (and so its count) by method, route pattern and status. Each
 * route gets its own observer when it is registered (its pattern is known then), which keeps
 * the labelled children it has used rather than looking them up on every answer.
 */
export const httpMetrics = fp<{ metrics: HttpMetrics }>(
  (app, { metrics }, done) => {
    const observer = (route: string): Observer => {
      const children = new Map<string, Observe>();
      return (request, reply, next) => {
        const key = `${request.method} ${reply.statusCode}`;
        let child = children.get(key);
        if (!child) {
          child = metrics.duration.labels(request.method, route, String(reply.statusCode));
          children.set(key, child);
        }
        child.observe(reply.elapsedTime / 1000);
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
