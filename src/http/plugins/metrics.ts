import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { HttpMetrics } from '../../metrics.ts';

type Series = ReturnType<HttpMetrics['duration']['series']>;
type Observer = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/** The label of requests no route matched (404, 405): never the raw URL, which would hold ids. */
const UNMATCHED_ROUTE = 'unmatched';

/**
 * Records every answer's latency (and so its count) by method, route pattern and status. Each
 * route gets its own observer when it is registered (its pattern is known then), which keeps
 * the histogram's series it has used by method and status code, so an answer builds no key.
 */
export const httpMetrics = fp<{ metrics: HttpMetrics }>(
  (app, { metrics }, done) => {
    const observer = (route: string): Observer => {
      const byMethod = new Map<string, Map<number, Series>>();
      return (request, reply, next) => {
        const { method } = request;
        const { statusCode } = reply;
        let byStatus = byMethod.get(method);
        if (!byStatus) {
          byStatus = new Map();
          byMethod.set(method, byStatus);
        }
        let series = byStatus.get(statusCode);
        if (!series) {
          series = metrics.duration.series(method, route, String(statusCode));
          byStatus.set(statusCode, series);
        }
        series.observe(reply.elapsedTime / 1000);
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
