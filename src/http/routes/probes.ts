import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { App } from '../app.ts';
import { createHttpMetrics } from '../metrics.ts';

export function registerProbeRoutes(app: App, ctx: AppContext): void {
  const metrics = createHttpMetrics();
  // Each route counts its own answers (the URL pattern is known when it is registered).
  app.addHook('onRoute', (route) => {
    const url = route.url;
    const observe = async (request: FastifyRequest, reply: FastifyReply) => {
      metrics.observe(request.method, url, reply.statusCode, reply.elapsedTime / 1000);
    };
    route.onResponse = [...[route.onResponse ?? []].flat(), observe];
  });

  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    try {
      await ctx.store.ping();
      return { status: 'ready', store: ctx.store.dialect };
    } catch {
      return reply.code(503).send({ status: 'unavailable', error_code: 'store_unavailable' });
    }
  });
  app.get('/metrics', { logLevel: 'warn' }, async (_request, reply) => {
    const jobs = await ctx.store.db
      .selectFrom('jobs')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('status', 'in', ['queued', 'running'])
      .groupBy('status')
      .execute()
      .catch(() => undefined);
    const mem = process.memoryUsage();
    const lines = [
      metrics.render(),
      '# HELP vrp_jobs Jobs waiting or running, all processes.',
      '# TYPE vrp_jobs gauge',
      ...['queued', 'running'].map(
        (s) => `vrp_jobs{status="${s}"} ${Number(jobs?.find((j) => j.status === s)?.n ?? 0)}`,
      ),
      '# HELP vrp_store_up Whether the store answered.',
      '# TYPE vrp_store_up gauge',
      `vrp_store_up ${jobs ? 1 : 0}`,
      '# TYPE process_resident_memory_bytes gauge',
      `process_resident_memory_bytes ${mem.rss}`,
      '# TYPE nodejs_heap_used_bytes gauge',
      `nodejs_heap_used_bytes ${mem.heapUsed}`,
    ];
    return reply.type('text/plain; version=0.0.4').send(`${lines.join('\n')}\n`);
  });
}
