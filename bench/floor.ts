/**
 * The floor: a bare Fastify app answering a constant envelope. What this stack does at best here.
 *
 * `node bench/floor.ts [layers] [dataDir]`, layers a comma-separated list, builds the same app with
 * some of what any production server on this stack carries, for the ladder (bench/run.ts,
 * `ladder`): what each costs against the bare floor, without any of this project's own work.
 * - `logger`: a pino logger at level warn (Fastify's child logger per request; nothing written);
 * - `hooks`: six no-op async hooks (onRequest x3, preHandler, onSend, onResponse), as many
 *   as the server runs for a request;
 * - `metrics`: prom-client's request counter and latency histogram, by route and status;
 * - `schema`: the answer serialized through a response schema.
 *
 * `app` (alone, with `dataDir`) is not the bare app but this project's own: src/http/app.ts's
 * buildApp on a SQLite store in `dataDir`, configured as the bench's server is (log level warn,
 * rate limiting off; no worker), with one more route, registered here and nowhere else,
 * `APP_FLOOR_PATH`, answering the floor's constant envelope: it carries the app's logger and
 * every hook a request meets before and after a route's work (request id, shutdown gate, not
 * found, envelope variant, body and storable-input checks, request metrics) but names no scope,
 * so it is neither authenticated nor enveloped. Beside it the app's own `GET version` (a
 * constant too, behind authentication, the envelope and a response schema), with the token the
 * process sends its parent with its port. `app-info` is the same app at log level `info`, the
 * production default: one access line per request, written as src/main.ts writes them
 * (src/log-destination.ts: pino's asynchronous destination, the lines of a turn handed to it
 * together), here to /dev/null.
 */
import { openSync } from 'node:fs';
import Fastify from 'fastify';
import { Counter, Histogram, Registry } from 'prom-client';
import { fetchToken } from '../test/helpers/e2e.ts';

export const FLOOR_LAYERS = ['logger', 'hooks', 'metrics', 'schema', 'app', 'app-info'] as const;
export type FloorLayer = (typeof FLOOR_LAYERS)[number];
/** The constant route of the `app` layer. */
export const APP_FLOOR_PATH = '/vps_reseller_provider/public/api/v2/bench-floor';
/** What a floor process sends its parent once it listens. */
export interface FloorReady {
  readonly port: number;
  /** `app` only: an access token of an application with every reseller scope. */
  readonly token?: string;
}

const body = { status: 'Success', message: '', data: { version: '2.0.0' } };

/** The project's app with the constant route (the `app` layer; `app-info` at level info). */
async function projectApp(dataDir: string, level: 'warn' | 'info') {
  const { loadConfig } = await import('../src/config.ts');
  const { createContext } = await import('../src/context.ts');
  const { buildApp } = await import('../src/http/app.ts');
  const { logDestination } = await import('../src/log-destination.ts');
  const { ensureReseller, registerApplication } = await import('../src/auth/applications.ts');
  const ctx = await createContext(
    loadConfig({ VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: level, VRP_RATE_LIMIT: '0' }),
  );
  const app =
    level === 'info'
      ? buildApp(ctx, { logger: { stream: logDestination(openSync('/dev/null', 'w')) } })
      : buildApp(ctx);
  // Registered after buildApp's plugins, so their onRoute hooks see it as they see every route.
  app.register(async (scope) => {
    scope.get(APP_FLOOR_PATH, async () => body);
  });
  await ensureReseller(ctx.store.db, 'bench', Date.now());
  const client = await registerApplication(ctx.store.db, { reseller: 'bench' }, Date.now());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  const token = await fetchToken(`http://127.0.0.1:${port}`, client);
  const close = async () => {
    await app.close();
    await ctx.store.close();
  };
  return { port, token, close };
}

/** The bare app with `layers`. */
async function bareApp(layers: ReadonlySet<string>) {
  const app = Fastify({ logger: layers.has('logger') ? { level: 'warn' } : false });
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
  return { port: (app.server.address() as { port: number }).port, close: () => app.close() };
}

if (import.meta.main) {
  const layers = new Set((process.argv[2] ?? '').split(',').filter(Boolean));
  for (const l of layers)
    if (!(FLOOR_LAYERS as readonly string[]).includes(l)) throw new Error(`unknown floor layer ${l}`);
  const appLevel = layers.has('app') ? 'warn' : layers.has('app-info') ? 'info' : undefined;
  if (appLevel && (layers.size > 1 || !process.argv[3]))
    throw new Error('the app layer goes alone, with a data directory');
  const served = appLevel ? await projectApp(process.argv[3]!, appLevel) : await bareApp(layers);
  const ready: FloorReady = { port: served.port, ...('token' in served && { token: served.token }) };
  process.send?.(ready);
  process.on('SIGTERM', () => served.close().then(() => process.exit(0)));
}
