/**
 * waitForStatus: follows the events feed (falling back to polling status where the feed is
 * not served) until the service settles in the wanted status, and fails fast when it cannot.
 */
import { VrpError } from './errors.ts';
import { delay } from './transport.ts';
import type { ServiceStatus, Status, VrpEvent } from './types.ts';

export interface WaitOptions {
  /** Give up after this long (default 10 minutes) with VrpError `wait_timeout`. */
  timeoutMs?: number | undefined;
  /** Stops waiting; the signal's reason is thrown. */
  signal?: AbortSignal | undefined;
  /** How often to read the feed (or status) while nothing happens (default 1000 ms). */
  pollMs?: number | undefined;
}

/** What waiting needs from the client. */
export interface WaitApi {
  status(serviceId: string, signal?: AbortSignal): Promise<ServiceStatus>;
  events(query: { after?: string | undefined; limit?: number }, signal?: AbortSignal): Promise<VrpEvent[]>;
}

const PAGE = 1000;

/**
 * Where the feed ends now, so that a wait reads only what happens after it. Kept per client
 * (a later wait pages on from there, not from the oldest event); undefined when the feed is
 * not available to this application (then waits poll status).
 */
export function createFeedTail(api: WaitApi) {
  let known: string | undefined;
  let unavailable = false;
  return {
    /** The id of the newest event now (undefined: there is none yet, or no feed). */
    async find(signal: AbortSignal): Promise<{ available: boolean; after: string | undefined }> {
      if (unavailable) return { available: false, after: undefined };
      let after = known;
      for (;;) {
        let page: VrpEvent[];
        try {
          page = await api.events({ after, limit: PAGE }, signal);
        } catch (err) {
          // The cursor kept is older than the events kept: start again from the oldest.
          if (err instanceof VrpError && err.errorCode === 'validation_failed' && after !== undefined) {
            after = known = undefined;
            continue;
          }
          // An older server without the feed, or an application without its scope: poll instead.
          if (err instanceof VrpError && (err.status === 404 || err.status === 403)) {
            unavailable = true;
            return { available: false, after: undefined };
          }
          throw err;
        }
        if (page.length > 0) after = page[page.length - 1]!.event_id;
        if (page.length < PAGE) break;
      }
      known = after;
      return { available: true, after };
    },
    advanced(after: string | undefined) {
      if (after !== undefined) known = after;
    },
  };
}

export type FeedTail = ReturnType<typeof createFeedTail>;

/**
 * Resolves with the service's status once it is `wanted` with no job running or queued.
 * Rejects with VrpError `unreachable_status` when it settles `failed` or `terminated` (unless
 * that is the one wanted), or when a job of the service fails during the wait and it settles
 * elsewhere; with `wait_timeout` when the time runs out.
 */
export async function waitForStatus(
  api: WaitApi,
  tail: FeedTail,
  serviceId: string,
  wanted: Status,
  options: WaitOptions = {},
): Promise<ServiceStatus> {
  const { timeoutMs = 600_000, pollMs = 1000 } = options;
  let last: ServiceStatus | undefined;
  const stop = new AbortController();
  const timer = setTimeout(() => {
    stop.abort(
      new VrpError(
        0,
        'wait_timeout',
        `Service ${serviceId} did not reach ${wanted} within ${timeoutMs} ms` +
          (last
            ? `; it is ${last.status}${last.job ? ` with job ${last.job.action} ${last.job.status}` : ''}`
            : ''),
        { lastStatus: last },
      ),
    );
  }, timeoutMs);
  const onAbort = () => stop.abort(options.signal?.reason);
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const signal = stop.signal;
  try {
    // The feed's end first, then the status: whatever changes after that status shows in the feed.
    const start = await tail.find(signal);
    const available = start.available;
    let after = start.after;
    let failedJob: Extract<VrpEvent, { type: 'job.finished' }>['data'] | undefined;
    for (;;) {
      last = await api.status(serviceId, signal);
      if (last.job === null) {
        if (last.status === wanted) return last;
        const why =
          last.status === 'failed' || last.status === 'terminated'
            ? `it is ${last.status}`
            : failedJob
              ? `its ${failedJob.action} job failed${failedJob.error ? `: ${failedJob.error}` : ''}, and it is ${last.status}`
              : undefined;
        if (why) {
          throw new VrpError(
            0,
            'unreachable_status',
            `Service ${serviceId} will not reach ${wanted}: ${why}`,
            {
              lastStatus: last,
            },
          );
        }
      }
      if (!available) {
        await delay(pollMs, signal);
        continue;
      }
      // Read the feed until something happens to this service.
      for (let relevant = false; !relevant; ) {
        const page = await api.events({ after, limit: PAGE }, signal);
        for (const event of page) {
          if (event.data.service_id !== serviceId) continue;
          relevant = true;
          if (event.type === 'job.finished' && event.data.status === 'failed') failedJob = event.data;
        }
        if (page.length > 0) {
          after = page[page.length - 1]!.event_id;
          tail.advanced(after);
        }
        if (!relevant && page.length < PAGE) await delay(pollMs, signal);
      }
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}
