/**
 * A PostgreSQL restart while the server runs gives 503 store_unavailable (not 500,
 * not a crash) on /readyz and on requests; the server recovers by itself; no job is lost.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type PostgresServer, startPostgres } from '../../scripts/postgres.ts';
import { waitUntil } from '../helpers/budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';

test('PostgreSQL restarts under a running server: 503 while down, recovery, no job lost', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  // Durable commits: the test crashes PostgreSQL and checks that no accepted job is lost.
  const pg: PostgresServer = await startPostgres({ durable: true });
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-pgrestart-'));
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.kill();
    pg.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { store, app } = await prepareStore(dataDir, pg.url);
  await store.close();
  server = await startServer({
    VRP_DATABASE_URL: pg.url,
    VRP_DATA_DIR: dataDir,
    VRP_SIMULATED_SPEED: '0.5',
    VRP_JOB_LEASE: '2s',
  });
  const base = server.url;
  const client = apiClient(() => base, await fetchToken(base, app));
  const api = (method: 'GET' | 'POST', path: string, body?: unknown) => client.call(method, path, body ?? {});
  const [{ service_id: id }] = await client.ok('POST', 'service/create-order', smallOrder('pg.example.com'));
  await client.ok('POST', `service/${id}/create`);
  const waitFor = async (what: string, ok: (data: any) => boolean) => {
    let last: unknown;
    await waitUntil(
      what,
      async () => {
        const r = await api('GET', `service/${id}/status`).catch(() => undefined);
        last = r?.body;
        return r?.status === 200 && ok(r.body.data);
      },
      { everyMs: 200 },
    ).catch((err: Error) => assert.fail(`${err.message}; last: ${JSON.stringify(last)}`));
  };
  await waitFor('the service to run', (d) => d.status === 'running' && d.job === null);

  // A job is running (a reboot takes 2.5 s at this speed) when the database goes away.
  assert.equal((await api('POST', `service/${id}/restart`)).status, 200);
  // Started, not merely queued (a stall of the test longer than the whole reboot would find it
  // done: the rest still holds, with nothing interrupted).
  await waitFor('the restart job to start', (d) => d.job?.status !== 'queued');
  const seen = { ready: [] as number[], api: [] as number[], codes: new Set<string>() };
  // Down for 4 s: asked until both /readyz and the API have answered 503 (or it is back).
  let down = true;
  const restart = pg.restart(4000).then(() => {
    down = false;
  });
  await waitUntil(
    '503 from /readyz and the API while PostgreSQL is down',
    async () => {
      try {
        const ready = await fetch(`${base}/readyz`);
        seen.ready.push(ready.status);
        const r = await api('GET', `service/${id}/status`);
        seen.api.push(r.status);
        if (r.body.error_code) seen.codes.add(r.body.error_code);
      } catch (err) {
        // No answer at all: say what the server said meanwhile (a connection reset was seen once).
        throw new Error(
          `${String(err)} (${String((err as Error).cause)}); server output:\n${server?.output()}`,
        );
      }
      return !down || (seen.ready.includes(503) && seen.api.includes(503));
    },
    { everyMs: 50 },
  );
  await restart;
  assert.ok(seen.ready.includes(503), `readyz answered ${seen.ready}`);
  assert.ok(seen.api.includes(503), `the API answered ${seen.api}`);
  assert.ok(!seen.api.includes(500), 'never a 500');
  assert.deepEqual([...seen.codes], ['store_unavailable']);

  // Back by itself: ready again, and the interrupted job finishes (retried after its lease).
  await waitUntil('readyz to recover', async () => (await fetch(`${base}/readyz`)).status === 200, {
    everyMs: 200,
  });
  await waitFor('the service to run again, its job done', (d) => d.status === 'running' && d.job === null);
  const jobs = (await api('GET', `service/${id}/jobs`)).body.data;
  assert.deepEqual(
    jobs.map((j: { action: string; status: string }) => [j.action, j.status]),
    [
      ['restart', 'succeeded'],
      ['create', 'succeeded'],
    ],
  );
  assert.equal(server.child.exitCode, null, 'the server did not crash');
  assert.equal(await server.stop(), 0);
});
