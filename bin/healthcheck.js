#!/usr/bin/env node
// The container image's HEALTHCHECK (Containerfile): exit 0 when this process's own server
// answers 200 on /readyz (the store can be reached), 1 otherwise. It asks the address the server
// listens on (VRP_HOST, VRP_PORT), or loopback where that is every address. Plain JavaScript
// and no dependency, so that it costs one short process per check.
const host = process.env.VRP_HOST || '127.0.0.1';
const port = process.env.VRP_PORT || '8080';
const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
const url = `http://${local.includes(':') ? `[${local}]` : local}:${port}/readyz`;

try {
  const res = await fetch(url, { signal: AbortSignal.timeout(4000) });
  if (res.status !== 200) {
    process.stderr.write(`healthcheck: ${url} answered ${res.status}\n`);
    process.exit(1);
  }
} catch (err) {
  process.stderr.write(`healthcheck: ${url}: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
