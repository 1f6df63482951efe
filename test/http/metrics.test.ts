import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { API, BASE, call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { waitUntil } from '../helpers/budget.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { testStores } from '../helpers/stores.ts';
import { missingTool, toolPath } from '../helpers/tools.ts';

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[k!] = v!;
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The value of the one sample named `name` with exactly these labels (undefined if none). */
function sampleValue(
  samples: Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  const found = samples.filter(
    (s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want,
  );
  assert.ok(found.length <= 1, `${name} ${want} appears ${found.length} times`);
  return found[0]?.value;
}

async function scrape(t: TestApp): Promise<{ text: string; samples: Sample[] }> {
  const res = await t.app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return { text: res.body, samples: parseSamples(res.body) };
}

const STATUS_ROUTE = `${API}/service/:service_id/status`;

for (const store of testStores()) {
  describe(`GET /metrics (${store})`, () => {
    test('counts answers by route pattern and status, job runs by action, and the queue', async () => {
      const t = await createTestApp({}, { worker: true, store });
      try {
        const token = await t.token();
        for (let i = 0; i < 2; i++) assert.equal((await call(t, token, 'GET', 'version')).status, 200);
        // Two different ids: one series for the route, and no id in any label.
        const unknownIds = [randomUUID(), randomUUID()];
        for (const id of unknownIds) {
          assert.equal((await call(t, token, 'GET', `service/${id}/status`)).status, 404);
        }
        const strayId = randomUUID();
        assert.equal(
          (await t.app.inject({ method: 'GET', url: `${BASE}/nothing/${strayId}` })).statusCode,
          404,
        );
        assert.equal((await t.app.inject({ method: 'DELETE', url: `${API}/version` })).statusCode, 405);

        // A real job run by this process's worker.
        const order = await call(t, token, 'POST', 'service/create-order', smallOrder('metrics.example.com'));
        const id = order.body.data[0].service_id as string;
        assert.equal((await call(t, token, 'POST', `service/${id}/create`)).status, 200);
        await waitForStatus(t, token, id, 'running');
        // The status shows once the job's end commits; the worker counts the job once that commit
        // is on the disk (a flush later on SQLite, src/store/wal-sync.ts).
        let scrapes = 0;
        const { text, samples } = await waitUntil('the job counted', async () => {
          scrapes++;
          const scraped = await scrape(t);
          return sampleValue(scraped.samples, 'vrp_jobs_finished_total', {
            action: 'create',
            status: 'succeeded',
          }) === 1
            ? scraped
            : undefined;
        });
        const http = (method: string, route: string, status: number) => ({
          method,
          route,
          status: String(status),
        });
        assert.equal(sampleValue(samples, 'vrp_http_requests_total', http('GET', `${API}/version`, 200)), 2);
        assert.equal(sampleValue(samples, 'vrp_http_requests_total', http('GET', STATUS_ROUTE, 404)), 2);
        assert.ok(
          (sampleValue(samples, 'vrp_http_requests_total', http('GET', STATUS_ROUTE, 200)) ?? 0) >= 1,
          'the status polls are counted',
        );
        assert.equal(sampleValue(samples, 'vrp_http_requests_total', http('GET', 'unmatched', 404)), 1);
        assert.equal(sampleValue(samples, 'vrp_http_requests_total', http('DELETE', 'unmatched', 405)), 1);
        assert.equal(
          sampleValue(samples, 'vrp_http_requests_total', http('POST', `${BASE}/oauth/token`, 200)),
          1,
        );
        for (const raw of [...unknownIds, strayId, id])
          assert.ok(!text.includes(raw), `${raw} is in a label`);

        // The latency histogram: every answer falls in the +Inf bucket, and the count agrees.
        const version = http('GET', `${API}/version`, 200);
        assert.equal(sampleValue(samples, 'vrp_http_request_duration_seconds_count', version), 2);
        assert.equal(
          sampleValue(samples, 'vrp_http_request_duration_seconds_bucket', { ...version, le: '+Inf' }),
          2,
        );
        assert.ok((sampleValue(samples, 'vrp_http_request_duration_seconds_sum', version) ?? -1) >= 0);

        assert.equal(
          sampleValue(samples, 'vrp_jobs_finished_total', { action: 'create', status: 'succeeded' }),
          1,
        );
        assert.equal(sampleValue(samples, 'vrp_job_duration_seconds_count', { action: 'create' }), 1);
        assert.equal(sampleValue(samples, 'vrp_jobs_waiting'), 0);
        assert.equal(sampleValue(samples, 'vrp_store_up'), 1);
        // prom-client's default process metrics, on this context's registry.
        for (const name of [
          'process_cpu_user_seconds_total',
          'process_start_time_seconds',
          'nodejs_heap_size_used_bytes',
        ]) {
          assert.ok((sampleValue(samples, name) ?? 0) > 0, `${name} is reported`);
        }

        // The queue is read from the store at scrape time: a job no worker has taken yet.
        await t.background?.stop(1000);
        assert.equal((await call(t, token, 'POST', `service/${id}/restart`)).status, 200);
        const after = await scrape(t);
        assert.equal(sampleValue(after.samples, 'vrp_jobs_waiting'), 1);
        assert.equal(
          sampleValue(after.samples, 'vrp_jobs_finished_total', { action: 'restart', status: 'succeeded' }),
          undefined,
        );
        // The scrapes before are counted too, under their own route.
        assert.equal(
          sampleValue(after.samples, 'vrp_http_requests_total', http('GET', '/metrics', 200)),
          scrapes,
        );
      } finally {
        await t.close();
      }
    });
  });
}

// Debian's prometheus package brings promtool (npm test installs it where it may; CI always has it).
test('promtool check metrics finds no problem in GET /metrics', {
  skip: missingTool('promtool'),
}, async () => {
  const promtool = toolPath('promtool');
  const t = await createTestApp({}, { worker: true });
  try {
    const token = await t.token();
    await call(t, token, 'GET', 'version');
    await t.app.inject({ method: 'GET', url: `${BASE}/nothing` });
    const order = await call(t, token, 'POST', 'service/create-order', smallOrder('promtool.example.com'));
    const id = order.body.data[0].service_id as string;
    await call(t, token, 'POST', `service/${id}/create`);
    await waitForStatus(t, token, id, 'running');
    const { text } = await scrape(t);
    const check = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(check.error, undefined);
    assert.equal(`${check.stdout}${check.stderr}`.trim(), '', 'promtool reports problems');
    assert.equal(check.status, 0);
  } finally {
    await t.close();
  }
});
