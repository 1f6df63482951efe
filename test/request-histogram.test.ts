import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { RequestHistogram } from '../src/request-histogram.ts';

const BOUNDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const LABELS = ['method', 'route', 'status'] as const;

/** The exposition's sample lines, each with its labels sorted by name: the order Prometheus ignores. */
function samples(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
      assert.ok(m, `not a sample line: ${line}`);
      const labels = [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)]
        .map(([, k, v]) => `${k}="${v}"`)
        .sort();
      return `${m[1]}{${labels.join(',')}} ${m[3]}`;
    });
}

/** The comment lines (HELP and TYPE) of the exposition. */
const comments = (text: string) => text.split('\n').filter((line) => line.startsWith('#'));

// Below the first bound, on bounds (`le` is inclusive), between them, on the last, above it.
const OBSERVED: readonly [string, string, string, number][] = [
  ['GET', '/a/:id', '200', 0.0004],
  ['GET', '/a/:id', '200', 0.001],
  ['GET', '/a/:id', '200', 0.0011],
  ['GET', '/a/:id', '200', 0.3],
  ['GET', '/a/:id', '200', 2.5],
  ['GET', '/a/:id', '200', 7],
  ['GET', '/a/:id', '404', 0.02],
  ['POST', '/b "quoted" \\ path', '500', 0],
];

describe('RequestHistogram', () => {
  test("exposes the same samples, HELP and TYPE as prom-client's own histogram for the same observations", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const histogram = new RequestHistogram('h_seconds', 'A latency.', LABELS, BOUNDS, ours);
    const reference = new Histogram({
      name: 'h_seconds',
      help: 'A latency.',
      labelNames: LABELS,
      buckets: BOUNDS,
      registers: [theirs],
    });
    for (const [method, route, status, seconds] of OBSERVED) {
      histogram.series(method, route, status).observe(seconds);
      reference.labels(method, route, status).observe(seconds);
    }
    const [a, b] = [await ours.metrics(), await theirs.metrics()];
    assert.deepEqual(samples(a), samples(b));
    assert.deepEqual(comments(a), comments(b));
    assert.ok(samples(a).includes('h_seconds_bucket{le="0.001",method="GET",route="/a/:id",status="200"} 2'));
    assert.ok(samples(a).includes('h_seconds_bucket{le="+Inf",method="GET",route="/a/:id",status="200"} 6'));
    assert.ok(samples(a).includes('h_seconds_count{method="GET",route="/a/:id",status="404"} 1'));
    // The registry's JSON (what a cluster's aggregation reads) agrees too.
    const json = (await ours.getMetricsAsJSON()).find((m) => m.name === 'h_seconds');
    const referenceJson = (await theirs.getMetricsAsJSON()).find((m) => m.name === 'h_seconds');
    assert.equal(json?.type, referenceJson?.type);
    assert.equal(json?.aggregator, referenceJson?.aggregator);
    assert.equal(json?.values.length, referenceJson?.values.length);
  });

  test('a series bound once counts every observation made through it, and one series per label values', async () => {
    const registry = new Registry();
    const histogram = new RequestHistogram('h_seconds', 'A latency.', LABELS, BOUNDS, registry);
    const series = histogram.series('GET', '/v', '200');
    for (let i = 0; i < 1000; i++) series.observe(0.002);
    histogram.series('GET', '/v', '200').observe(0.002);
    assert.deepEqual(
      [...histogram.counts()],
      [{ labels: { method: 'GET', route: '/v', status: '200' }, count: 1001 }],
    );
    const text = samples(await registry.metrics());
    assert.ok(text.includes('h_seconds_bucket{le="0.001",method="GET",route="/v",status="200"} 0'));
    assert.ok(text.includes('h_seconds_bucket{le="0.005",method="GET",route="/v",status="200"} 1001'));
    let sum = 0;
    for (let i = 0; i < 1001; i++) sum += 0.002;
    assert.ok(text.includes(`h_seconds_sum{method="GET",route="/v",status="200"} ${sum}`));
  });

  test('the registry reset counts from zero, and a bound series shows again once it is observed', async () => {
    const registry = new Registry();
    const histogram = new RequestHistogram('h_seconds', 'A latency.', LABELS, BOUNDS, registry);
    const series = histogram.series('GET', '/v', '200');
    series.observe(0.5);
    registry.resetMetrics();
    assert.deepEqual(samples(await registry.metrics()), []);
    assert.deepEqual([...histogram.counts()], []);
    series.observe(3);
    const text = samples(await registry.metrics());
    assert.ok(text.includes('h_seconds_bucket{le="2.5",method="GET",route="/v",status="200"} 0'));
    assert.ok(text.includes('h_seconds_bucket{le="+Inf",method="GET",route="/v",status="200"} 1'));
    assert.ok(text.includes('h_seconds_sum{method="GET",route="/v",status="200"} 3'));
  });

  test('refuses a value that is not a finite number, wrong label values, bounds out of order and a second metric of its name', () => {
    const registry = new Registry();
    const histogram = new RequestHistogram('h_seconds', 'A latency.', LABELS, BOUNDS, registry);
    const series = histogram.series('GET', '/v', '200');
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      assert.throws(() => series.observe(bad), TypeError);
    }
    assert.deepEqual([...histogram.counts()], []);
    assert.throws(() => histogram.series('GET', '/v'), /3 label values expected, got 2/);
    assert.throws(() => new RequestHistogram('x', 'x', LABELS, [1, 1], new Registry()), /increasing/);
    assert.throws(() => new RequestHistogram('y', 'y', LABELS, [0.5, Number.NaN], new Registry()), /finite/);
    assert.throws(
      () => new RequestHistogram('h_seconds', 'again', LABELS, BOUNDS, registry),
      /already been registered/,
    );
  });
});
