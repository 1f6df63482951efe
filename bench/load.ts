/**
 * One load run, in its own process, so the load generator shares no event loop with the
 * server or with the bench driver. argv[2] is JSON (LoadOptions); prints JSON (LoadResult).
 *
 * A warm-up run (not measured) comes first. With `idsFile` and `pathTemplate`, each request's
 * path is the template with `{id}` replaced by a random line of the file.
 * stdout: a line `measure` when the measured run starts, then the result's JSON, with the CPU time
 * this process spent generating the measured load.
 */
import { readFileSync } from 'node:fs';
import autocannon, { type Request } from 'autocannon';

export interface LoadOptions {
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly connections: number;
  /** Seconds measured. */
  readonly duration: number;
  /** Seconds of unmeasured load first. */
  readonly warmup: number;
  readonly idsFile?: string;
  readonly pathTemplate?: string;
}

export interface LoadResult {
  /** Requests per second, over the measured run. */
  readonly rps: number;
  readonly total: number;
  /** Latency in ms. */
  readonly p50: number;
  readonly p99: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  /** Count of answers per status class (2xx, 4xx...). */
  readonly statuses: Record<string, number>;
  /** This load generator's own CPU time (user + system) over the measured run, µs. */
  readonly ownCpuUs: number;
}

const o = JSON.parse(process.argv[2]!) as LoadOptions;
const ids = o.idsFile ? readFileSync(o.idsFile, 'utf8').split('\n').filter(Boolean) : [];
const template = o.pathTemplate ?? o.path;

function run(duration: number) {
  return autocannon({
    url: o.url + o.path,
    method: o.method,
    headers: o.headers,
    body: o.body,
    connections: o.connections,
    duration,
    requests:
      ids.length > 0
        ? [
            {
              setupRequest: (req: Request) => {
                req.path = template.replace('{id}', ids[Math.floor(Math.random() * ids.length)]!);
                return req;
              },
            },
          ]
        : undefined,
  });
}

if (o.warmup > 0) await run(o.warmup);
// Tells the driver the measured part begins (it samples the server's CPU time from here).
process.stdout.write('measure\n');
const cpu0 = process.cpuUsage();
const r = await run(o.duration);
const cpu = process.cpuUsage(cpu0);
const statuses: Record<string, number> = {};
for (const k of ['1xx', '2xx', '3xx', '4xx', '5xx'] as const) {
  const n = r[k];
  if (n) statuses[k] = n;
}
const result: LoadResult = {
  rps: r.requests.total / r.duration,
  total: r.requests.total,
  p50: r.latency.p50,
  p99: r.latency.p99,
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  statuses,
  ownCpuUs: cpu.user + cpu.system,
};
process.stdout.write(JSON.stringify(result));
