/**
 * One load run in its own process (so the load generator shares no event loop with the server
 * or the bench driver). argv[2] is JSON: {url, method, headers, body, connections, duration, idsFile, pathTemplate}.
 * Prints JSON: {rps, p50, p99, non2xx, errors}.
 */
import { readFileSync } from 'node:fs';
import autocannon, { type Request } from 'autocannon';

const o = JSON.parse(process.argv[2]!) as {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  connections: number;
  duration: number;
  idsFile?: string;
  pathTemplate?: string;
};
const ids = o.idsFile ? readFileSync(o.idsFile, 'utf8').split('\n').filter(Boolean) : [];
const result = await autocannon({
  url: o.url,
  method: o.method,
  headers: o.headers,
  body: o.body,
  connections: o.connections,
  duration: o.duration,
  requests: ids.length
    ? [
        {
          setupRequest: (req: Request) => ({
            ...req,
            path: o.pathTemplate!.replace('{id}', ids[Math.floor(Math.random() * ids.length)]!),
          }),
        },
      ]
    : undefined,
});
process.stdout.write(
  JSON.stringify({
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  }),
);
