/**
 * A job's attempts: every claim is one (counted in `jobs.attempts`), whether the attempt ends in a
 * transient error or its worker dies. The wait before the next grows with each, and once
 * VRP_JOB_MAX_ATTEMPTS are used the job fails instead of running again, so a job that never
 * succeeds cannot hold its service's queue for ever.
 */

const RETRY_CAP_MS = 5 * 60_000;

/**
 * The wait after attempt number `attempts` failed: `baseMs` doubled per attempt made, capped at
 * 5 minutes, give or take 20 % so jobs that failed together do not all come back together.
 */
export function retryDelayMs(baseMs: number, attempts: number, random: () => number = Math.random): number {
  const delay = Math.min(RETRY_CAP_MS, baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(delay * (0.8 + random() * 0.4));
}

const RETRYING = /^Attempt \d+ (?:failed|did not finish), retrying: /;

/** The error a job shows while it waits for its next attempt. */
export function retryingError(attempt: number, reason: string): string {
  return `Attempt ${attempt} failed, retrying: ${reason}`;
}

/** The error of a job whose worker stopped before the attempt ended (a crash, a lost lease). */
export function unfinishedError(attempt: number): string {
  return `Attempt ${attempt} did not finish, retrying: the worker running it stopped`;
}

/** The error of a job that used its attempts, with the last attempt's reason. */
export function gaveUpError(attempts: number, lastError: string | null): string {
  const reason = lastError?.replace(RETRYING, '') || 'no attempt finished';
  return `Gave up after ${attempts} attempts: ${reason}`;
}
