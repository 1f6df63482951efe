/**
 * The floor: a bare Fastify app answering a constant envelope. What this stack does at best here.
 *
 * `node bench/floor.ts [layers]`, layers a comma-separated list, builds the same app with some of
 * what any production server on this stack carries, for the ladder (bench/run.ts, `ladder`):
 * what each costs against the bare floor, without any of this project's own work.
 * - `logger`: a pino logger at level warn (Fastify's child logger per request; nothing written);
 * - `hooks`: six no-op async hooks (onRequest x3, preHandler, onSend, onResponse), as many
 *   as the server runs for a request;
 * - `metrics`: prom-client's request counter and latency histogram, by route and status;
 * - `schema`: the answer serialized through a response schema.
 */
import Fastify from 'fastify';
import { Counter, Histogram, Registry } from 'prom-client';

export const FLOOR_LAYERS = ['logger', 'hooks', 'metrics', 'schema'] as const;
export type FloorLayer = (typeof FLOOR_LAYERS)[number];

const layers = new Set((process.argv[2] ?? '').split(',').filter(Boolean));
for (const l of layers)
  if (!(FLOOR_LAYERS as readonly string[]).includes(l)) throw new Error(`unknown floor layer ${l}`);

const app = Fastify({ logger: layers.has('logger') ? { level: 'warn' } : false });
const body = { status: 'Success', message: '', data: { version: '2.0.0' } };

if (layers.has('hooks')) {
  for (let i = 0; i < 3; i++) app.addHook('onRequest', async () => {});
  app.addHook('preHandler', async () => {});
  app.addHook('onSend', async (_request, _reply, payload) => payload);
  app.addHook('onResponse', async () => {});
}
if (layers.has('metrics')) {
  const registers = [new Registry()];
  const labelNames = ['route', 'status'];
  const requests = new Counter({ name: 'floor_requests_total', help: 'requests', labelNames, registers });
  const seconds = new Histogram({ name: 'floor_request_seconds', help: 'latency', labelNames, registers });
  app.addHook('onResponse', async (request, reply) => {
    const labels = { route: request.routeOptions.url ?? '', status: String(reply.statusCode) };
    requests.inc(labels);
    seconds.observe(labels, reply.elapsedTime / 1000);
  });
}
const str = { type: 'string' } as const;
const schema = layers.has('schema')
  ? {
      response: {
        200: {
          type: 'object',
          properties: { status: str, message: str, data: { type: 'object', properties: { version: str } } },
        },
      },
    }
  : undefined;
app.all('/*', schema ? { schema } : {}, async () => body);

await app.listen({ host: '127.0.0.1', port: 0 });
process.send?.({ port: (app.server.address() as { port: number }).port });
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
