import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import type { App } from '../app-type.ts';

const Alive = Type.Object({ status: Type.Literal('ok') });
const Ready = Type.Object({
  status: Type.Literal('ready'),
  store: Type.String({ examples: ['sqlite', 'postgres'] }),
});
const Unavailable = Type.Object({
  status: Type.Literal('unavailable'),
  error_code: Type.Literal('store_unavailable'),
});

const tags = ['Operations'];

export function registerProbeRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/healthz',
    {
      logLevel: 'warn',
      schema: {
        operationId: 'healthz',
        tags,
        summary: 'Liveness probe',
        description: 'Answers while the process serves requests; it reads nothing else.',
        response: { 200: Alive },
      },
    },
    async () => ({ status: 'ok' as const }),
  );
  app.get(
    '/readyz',
    {
      logLevel: 'warn',
      schema: {
        operationId: 'readyz',
        tags,
        summary: 'Readiness probe',
        description: 'Answers 200 when the store can be reached, else 503.',
        response: { 200: Ready },
        // Not a response schema: Fastify would serialize the error envelope of a 503 with it too.
        responses: {
          503: {
            description: 'The store cannot be reached',
            content: { 'application/json': { schema: Unavailable } },
          },
        },
      },
    },
    // Typed as any reply: the 503 is declared for the document only (above).
    async (_request, reply: FastifyReply) => {
      try {
        await ctx.store.ping();
        return { status: 'ready' as const, store: ctx.store.dialect };
      } catch {
        return reply.code(503).send({ status: 'unavailable', error_code: 'store_unavailable' });
      }
    },
  );
  // This process's metrics (src/metrics.ts); the job queue's are read from the store now.
  app.get(
    '/metrics',
    {
      logLevel: 'warn',
      schema: {
        operationId: 'metrics',
        tags,
        summary: 'Prometheus metrics',
        description:
          'This process’s metrics in the Prometheus text format, and the job queue’s from the store.',
        response: {
          200: {
            description: 'Prometheus text exposition format 0.0.4',
            content: { 'text/plain': { schema: Type.String() } },
          },
        },
      },
    },
    async (_request, reply) => {
      const { registry } = ctx.metrics;
      const text = await registry.metrics();
      return reply.type(registry.contentType).send(text);
    },
  );
}
