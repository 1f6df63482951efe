import type { AppContext } from '../../context.ts';
import type { App } from '../app.ts';

export function registerProbeRoutes(app: App, ctx: AppContext): void {
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    try {
      await ctx.store.ping();
      return { status: 'ready', store: ctx.store.dialect };
    } catch {
      return reply.code(503).send({ status: 'unavailable', error_code: 'store_unavailable' });
    }
  });
  // This process's metrics (src/metrics.ts); the job queue's are read from the store now.
  app.get('/metrics', { logLevel: 'warn' }, async (_request, reply) => {
    const { registry } = ctx.metrics;
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
}
