/**
 * When a failed delivery is tried again, by default (VRP_WEBHOOK_RETRY_SCHEDULE sets another):
 * the Standard Webhooks schedule. Eight attempts in all,
 * the first at once, the last 27 h 35 min after it, so a receiver that is down for a day still
 * gets every event.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];

/** Attempts a delivery gets before it is given up, on the default schedule. */
export const MAX_DELIVERY_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** The wait before the next attempt after `attempts` failed ones; undefined when none is left. */
export function retryDelayMs(
  attempts: number,
  schedule: readonly number[] = RETRY_DELAYS_MS,
): number | undefined {
  return schedule[Math.max(1, attempts) - 1];
}
