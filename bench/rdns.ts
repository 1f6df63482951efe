/**
 * `node bench/rdns.ts`: reverse DNS on a real PowerDNS Authoritative (pdns_server with its sqlite3
 * backend, started on loopback as the tests start it). One process on a fresh SQLite store, one
 * running service; ROUNDS times: `POST service/{id}/rdns` with a new PTR, timed to its 200, then
 * `dig -x` asked every 10 ms until it answers the new name, timed from the 200. The interface
 * asks for the answer within 5 s of the 200. Writes its section of bench/RESULTS.md (between
 * `<!-- rdns -->` markers). Not part of `npm run bench`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { call, createTestApp, orderRunning } from '../test/helpers/app.ts';
import { startPowerDns } from '../test/helpers/powerdns.ts';
import { writeSection } from './sections.ts';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = 40;
const pdns = await startPowerDns();
const t = await createTestApp(
  { ...pdns.env, VRP_RDNS_DEFAULT: 'ip-{ip}.bench.example.net' },
  { worker: true },
);
const api: number[] = [];
const answer: number[] = [];
try {
  const token = await t.token();
  const id = await orderRunning(t, token, 'rdns-bench.example.com');
  const details = await call(t, token, 'GET', `service/${id}/details`);
  const ip = details.body.data.ip as string;
  for (let i = 0; i < ROUNDS; i++) {
    const ptr = `r${i}.bench.example.com`;
    const start = performance.now();
    const res = await call(t, token, 'POST', `service/${id}/rdns`, { ip, ptr });
    if (res.status !== 200) throw new Error(`set answered ${res.status}: ${JSON.stringify(res.body)}`);
    const ok = performance.now();
    api.push(ok - start);
    for (;;) {
      const got = execFileSync('dig', ['@127.0.0.1', '-p', String(pdns.dnsPort), '-x', ip, '+short'], {
        encoding: 'utf8',
      }).trim();
      if (got === `${ptr}.`) break;
      if (performance.now() - ok > 10_000) throw new Error(`no answer ${ptr} after 10 s: ${got}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    answer.push(performance.now() - ok);
  }
} finally {
  await t.close();
  await pdns.close();
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};
const row = (name: string, xs: number[]) =>
  `| ${name} | ${pct(xs, 50).toFixed(1)} | ${pct(xs, 95).toFixed(1)} | ${Math.max(...xs).toFixed(1)} |`;
const section = `<!-- rdns -->
## Reverse DNS on PowerDNS (bench/rdns.ts, ${new Date().toISOString().slice(0, 10)})

${ROUNDS} PTR sets of one service's address through \`POST service/{id}/rdns\` (SQLite, pdns_server
${spawnSync('pdns_server', ['--version'], { encoding: 'utf8' }).stderr.match(/\d+\.\d+\.\d+/)?.[0] ?? ''} with its sqlite3 backend, both on loopback), each followed by \`dig -x\` every 10 ms
until it answers the new name. Target: the answer within 5 s of the 200.

| ms | median | p95 | max |
|---|---:|---:|---:|
${row('set, request to 200', api)}
${row('200 to the first dig answer with the new name', answer)}
<!-- /rdns -->`;
writeSection(join(here, 'RESULTS.md'), 'rdns', section);
console.log(section);
