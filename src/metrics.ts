import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type Clock, systemClock } from './domain/clock.ts';
import type { CorrectionKind } from './domain/power-drift.ts';
import { RequestHistogram } from './request-histogram.ts';
import type { Store } from './store/database.ts';
import { hostHealths } from './store/repos/host-health.ts';
import { hostTrafficTotals } from './store/repos/traffic.ts';
import { oldestDueAttempt } from './store/repos/webhook-deliveries.ts';
import type { WebhookMetrics } from './webhooks/deliverer.ts';

/**
 * What the HTTP layer records: every answer's latency, by method, route pattern and status.
 * `vrp_http_requests_total` is this histogram's count, copied at scrape time, so an answer
 * costs one prom-client update, not two.
 */
export interface HttpMetrics {
  /** Labelled `method`, `route`, `status`, in that order. */
  readonly duration: RequestHistogram<HttpLabel>;
}

type HttpLabel = 'method' | 'route' | 'status';

/**
 * How a job run of this process's worker ended: the worker's outcome (`succeeded`, `failed`,
 * `retrying`, `lost`), or `error` when the run itself threw (its lease expires and it is retried).
 */
export type JobRunStatus = 'succeeded' | 'failed' | 'retrying' | 'lost' | 'error';

/** What the worker records: each job run, by action and how it ended, and how long it took. */
export interface JobMetrics {
  record(action: string, status: JobRunStatus, seconds: number): void;
}

/** What the power-state reconciler records: each correction, by kind (domain/power-drift.ts). */
export interface PowerMetrics {
  corrected(kind: CorrectionKind): void;
}

/** The metrics of one process, served at `GET /metrics`. */
export interface Metrics {
  /**
   * This context's own registry, not prom-client's global one: tests build many contexts in one
   * process, and each must count only its own traffic.
   */
  readonly registry: Registry;
  readonly http: HttpMetrics;
  readonly jobs: JobMetrics;
  readonly webhooks: WebhookMetrics;
  readonly power: PowerMetrics;
}

/** HTTP answers are milliseconds; the slow end is a store under load. */
const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Jobs take from milliseconds (simulated hypervisor) to minutes (a real VM's backup). */
const JOB_BUCKETS = [0.01, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800];

const REFUSED_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** `clock` is the server's: the one delivery attempts are scheduled by. */
export function createMetrics(store: Store, clock: Clock = systemClock): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Gauges named like counters, which Prometheus's linter (promtool check metrics) refuses; the
  // same gauges without "_total", labelled by type, sum to them.
  for (const name of REFUSED_DEFAULT_METRICS) registry.removeSingleMetric(name);
  const labelNames = ['method', 'route', 'status'] as const;
  const http: HttpMetrics = {
    duration: new RequestHistogram(
      'vrp_http_request_duration_seconds',
      'Time to answer an HTTP request, by method, route pattern ("unmatched" when no route) and status.',
      labelNames,
      HTTP_BUCKETS,
      registry,
    ),
  };
  new Counter({
    name: 'vrp_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern ("unmatched" when no route) and status.',
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, count } of http.duration.counts()) this.inc(labels, count);
    },
  });
  const finished = new Counter({
    name: 'vrp_jobs_finished_total',
    help: "Job runs of this process's worker, by action and how they ended.",
    labelNames: ['action', 'status'] as const,
    registers: [registry],
  });
  const jobDuration = new Histogram({
    name: 'vrp_job_duration_seconds',
    help: "Time a job run of this process's worker took, by action.",
    labelNames: ['action'] as const,
    buckets: JOB_BUCKETS,
    registers: [registry],
  });
  // Read from the store at scrape time: the queue is shared by every process.
  new Gauge({
    name: 'vrp_jobs_waiting',
    help: 'Jobs queued and not started yet, all processes (NaN when the store does not answer).',
    registers: [registry],
    async collect() {
      this.set(await countQueuedJobs(store).catch(() => Number.NaN));
    },
  });
  new Gauge({
    name: 'vrp_store_up',
    help: 'Whether the store answered this scrape (1) or not (0).',
    registers: [registry],
    async collect() {
      this.set(
        await store.ping().then(
          () => 1,
          () => 0,
        ),
      );
    },
  });
  new Gauge({
    name: 'vrp_host_up',
    help: 'Whether each hypervisor host answers (1) or has been found unreachable (0), by host name, as host health last recorded it.',
    labelNames: ['host'] as const,
    registers: [registry],
    async collect() {
      // Hosts come and go at run time: the ones removed must not linger as series.
      this.reset();
      const hosts = await hostHealths(store.db).catch(() => []);
      for (const h of hosts) this.labels(h.name).set(h.up ? 1 : 0);
    },
  });
  new Counter({
    name: 'vrp_traffic_bytes_total',
    help: 'Bytes into (direction="in") and out of (direction="out") the servers of each hypervisor host, by host name, as the traffic sampler counted them, all processes.',
    labelNames: ['host', 'direction'] as const,
    registers: [registry],
    async collect() {
      // From the store: every process's samples count, and hosts removed must not linger.
      this.reset();
      const totals = await hostTrafficTotals(store.db).catch(() => []);
      for (const t of totals) {
        this.labels(t.host, 'in').inc(t.inBytes);
        this.labels(t.host, 'out').inc(t.outBytes);
      }
    },
  });
  const sent = new Counter({
    name: 'vrp_webhook_deliveries_sent_total',
    help: "Webhook delivery attempts of this process's sender answered with a 2xx.",
    registers: [registry],
  });
  const failed = new Counter({
    name: 'vrp_webhook_deliveries_failed_total',
    help: "Webhook delivery attempts of this process's sender that got no 2xx, by reason (status, timeout, network, refused, internal).",
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const abandoned = new Counter({
    name: 'vrp_webhook_deliveries_abandoned_total',
    help: "Webhook deliveries this process's sender gave up after their last attempt failed.",
    registers: [registry],
  });
  new Gauge({
    name: 'vrp_webhook_queue_age_seconds',
    help: 'How long the longest-waiting due webhook delivery attempt has waited, all processes (0 when none waits; NaN when the store does not answer).',
    registers: [registry],
    async collect() {
      const now = clock.now();
      const due = await oldestDueAttempt(store.db, now).then(
        (at) => (at === undefined ? 0 : Math.max(0, now - at) / 1000),
        () => Number.NaN,
      );
      this.set(due);
    },
  });
  const corrections = new Counter({
    name: 'vrp_power_corrections_total',
    help: "Corrections of this process's power-state reconciler, by kind (stopped_outside_api, started_outside_api, vm_missing, suspended_powered_off).",
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  return {
    registry,
    http,
    power: { corrected: (kind) => corrections.labels(kind).inc() },
    webhooks: {
      sent: () => sent.inc(),
      failed(reason, final) {
        failed.labels(reason).inc();
        if (final) abandoned.inc();
      },
    },
    jobs: {
      record(action, status, seconds) {
        finished.labels(action, status).inc();
        jobDuration.labels(action).observe(seconds);
      },
    },
  };
}

async function countQueuedJobs(store: Store): Promise<number> {
  const row = await store.db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('status', '=', 'queued')
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
