/** Prometheus counters of this process's HTTP traffic, kept in memory. */
export interface HttpMetrics {
  observe(method: string, route: string, status: number, seconds: number): void;
  render(): string;
}

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;

export function createHttpMetrics(): HttpMetrics {
  const counts = new Map<string, number>();
  const durations = new Map<string, { buckets: number[]; sum: number; count: number }>();
  return {
    observe(method, route, status, seconds) {
      const key = `method="${method}",route="${route}",status="${status}"`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      const dkey = `method="${method}",route="${route}"`;
      let d = durations.get(dkey);
      if (!d) {
        d = { buckets: BUCKETS.map(() => 0), sum: 0, count: 0 };
        durations.set(dkey, d);
      }
      for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) d.buckets[i]!++;
      d.sum += seconds;
      d.count++;
    },
    render() {
      const lines = [
        '# HELP vrp_http_requests_total HTTP requests answered.',
        '# TYPE vrp_http_requests_total counter',
      ];
      for (const [k, v] of counts) lines.push(`vrp_http_requests_total{${k}} ${v}`);
      lines.push(
        '# HELP vrp_http_request_duration_seconds Time to answer.',
        '# TYPE vrp_http_request_duration_seconds histogram',
      );
      for (const [k, d] of durations) {
        for (const [i, b] of BUCKETS.entries()) {
          lines.push(`vrp_http_request_duration_seconds_bucket{${k},le="${b}"} ${d.buckets[i]}`);
        }
        lines.push(`vrp_http_request_duration_seconds_bucket{${k},le="+Inf"} ${d.count}`);
        lines.push(`vrp_http_request_duration_seconds_sum{${k}} ${d.sum}`);
        lines.push(`vrp_http_request_duration_seconds_count{${k}} ${d.count}`);
      }
      return lines.join('\n');
    },
  };
}
