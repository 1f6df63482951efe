/** The floor: a bare Fastify app answering a constant envelope. What this stack does at best here. */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const body = { status: 'Success', message: '', data: { version: '2.0.0' } };
app.all('/*', async () => body);
const port = Number(process.argv[2] ?? 0);
await app.listen({ host: '127.0.0.1', port });
process.send?.({ port: (app.server.address() as { port: number }).port });
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
