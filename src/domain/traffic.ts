/**
 * Traffic accounting and limits: pure rules. A server's traffic is read from its interface
 * counters (drivers' `interfaceCounters`), which count from zero since the interfaces were
 * created; the worker turns successive readings into bytes per service per UTC day
 * (jobs/traffic-sampler.ts), and a month's total is checked against its product's quota.
 */

/** One GB of traffic: 10^9 bytes, as providers bill it. */
export const BYTES_PER_GB = 1_000_000_000;

/** GB of `bytes`, to six decimals (exact to the kB), as the usage report's hours are. */
export function gbOf(bytes: number): number {
  return Math.round(bytes / 1000) / 1_000_000;
}

/** The first ms of the UTC day of `ms`. */
export function utcDay(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
}

/** The first ms of the UTC month of `ms`. */
export function utcMonth(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** The first ms of the UTC month after the one of `ms`. */
export function nextUtcMonth(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** `2026-03`: a UTC month as events name it. */
export function monthName(monthStart: number): string {
  return new Date(monthStart).toISOString().slice(0, 7);
}

/** A reading of a VM's counters, or the one kept of it. */
export interface CounterReading {
  readonly hostId: string;
  readonly session: string;
  readonly inBytes: number;
  readonly outBytes: number;
}

/**
 * The bytes between two readings of a VM's counters. Counters that started again from zero
 * (the VM booted or moved: another host, another session, or a counter below the last reading)
 * count whole: everything they hold came after the last reading. Never negative.
 */
export function counterDelta(
  last: CounterReading | undefined,
  now: CounterReading,
): { inBytes: number; outBytes: number } {
  const reset =
    last === undefined ||
    last.hostId !== now.hostId ||
    last.session !== now.session ||
    now.inBytes < last.inBytes ||
    now.outBytes < last.outBytes;
  if (reset) return { inBytes: Math.max(0, now.inBytes), outBytes: Math.max(0, now.outBytes) };
  return { inBytes: now.inBytes - last.inBytes, outBytes: now.outBytes - last.outBytes };
}

/** What happens to a service past its product's monthly quota. */
export type TrafficOver = { readonly kind: 'throttle'; readonly mbit: number } | { readonly kind: 'suspend' };

/** The largest throttle rate, Mbit/s (100 Gbit/s). */
export const MAX_THROTTLE_MBIT = 100_000;

/** `throttle:MBIT` (1..100000) or `suspend`; undefined if `text` is neither. */
export function parseTrafficOver(text: string): TrafficOver | undefined {
  if (text === 'suspend') return { kind: 'suspend' };
  const m = /^throttle:(\d{1,6})$/.exec(text);
  const mbit = Number(m?.[1]);
  if (!m || mbit < 1 || mbit > MAX_THROTTLE_MBIT) return undefined;
  return { kind: 'throttle', mbit };
}

/** A month's traffic past the quota: in and out together, above `quotaGb` GB. */
export function pastQuota(inBytes: number, outBytes: number, quotaGb: number): boolean {
  return inBytes + outBytes > quotaGb * BYTES_PER_GB;
}
