/**
 * A token bucket per application: `rate` requests per second on average, bursts up to
 * `burst`. Per process; with N API processes the provider-wide limit is N times this.
 */
export interface RateLimiter {
  /** 0 if the request may go ahead (and counts it); otherwise milliseconds to wait. */
  take(key: string, nowMs: number): number;
}

export function createRateLimiter(rate: number, burst: number): RateLimiter {
  if (rate <= 0) return { take: () => 0 };
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key, nowMs) {
      let b = buckets.get(key);
      if (!b) {
        if (buckets.size > 100_000) buckets.clear();
        b = { tokens: burst, at: nowMs };
        buckets.set(key, b);
      }
      b.tokens = Math.min(burst, b.tokens + ((nowMs - b.at) / 1000) * rate);
      b.at = nowMs;
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return 0;
      }
      return Math.ceil(((1 - b.tokens) / rate) * 1000);
    },
  };
}
