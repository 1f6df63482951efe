import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../domain/clock.ts';
import type { SecretBox } from '../domain/secret-box.ts';
import { RETRY_DELAYS_MS, retryDelayMs } from '../domain/webhook-retry-schedule.ts';
import { createPollLoop } from '../loop/poll-loop.ts';
import { createJobSignal } from '../loop/signal.ts';
import type { Store } from '../store/database.ts';
import { isStoreUnavailable } from '../store/errors.ts';
import { eventsById, type StoredEvent } from '../store/repos/events.ts';
import {
  type AttemptOutcome,
  anyDue,
  claimDeliveries,
  type Delivery,
  dropDelivery,
  dueCandidates,
  recordAttempt,
  releaseAttempt,
} from '../store/repos/webhook-deliveries.ts';
import { type Webhook, webhooksById } from '../store/repos/webhooks.ts';
import { ENDPOINT_CAP, endpointOf, type Load, mayStart, pickFair } from './fair-share.ts';
import type { HostLookup } from './lookup.ts';
import { type FailureReason, postWebhook, SendFailure } from './send.ts';
import { signMessage } from './signature.ts';
import { resolveTarget, TargetRefused } from './target.ts';

/** A 2xx within 10 s is a success (docs/design/contract.md#events-and-webhooks). */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** What the webhook sender records (metrics.ts counts it for Prometheus): each attempt, by how it ended. */
export interface WebhookMetrics {
  /** An attempt answered 2xx. */
  sent(): void;
  /** An attempt that got no 2xx; `final` when it was the delivery's last. */
  failed(reason: FailureReason, final: boolean): void;
}

export interface DelivererOptions {
  readonly store: Store;
  /** The server's clock: when attempts are due. Leases and the signature's timestamp are in real time. */
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  readonly secretBox: SecretBox;
  readonly lookup: HostLookup;
  /** Receivers on private, loopback and link-local addresses are allowed (VRP_WEBHOOK_ALLOW_PRIVATE). */
  readonly allowPrivate: boolean;
  /** Attempts under way at once, each to a different webhook. */
  readonly concurrency: number;
  /** Attempts under way at once to one endpoint (scheme, host, port), whosever webhooks (default 2). */
  readonly endpointCap?: number;
  /** The waits before each retry (default: the Standard Webhooks schedule, RETRY_DELAYS_MS). */
  readonly retrySchedule?: readonly number[];
  /** How long an attempt waits for an answer (default 10 s). */
  readonly timeoutMs?: number;
  /** How long a claimed attempt stays this process's (default: three times the timeout). */
  readonly leaseMs?: number;
  /** Longest wait between looks at the queue when nothing wakes the loop (default 1 s). */
  readonly pollMs?: number;
  readonly metrics?: WebhookMetrics;
}

export interface Deliverer {
  readonly id: string;
  start(): void;
  /**
   * Stops claiming, waits up to `graceMs` for the attempts under way, then aborts the rest and
   * gives them back to the queue unmade (another process, or this one restarted, makes them).
   */
  stop(graceMs?: number): Promise<void>;
  /** Looks at the queue now (events were just recorded in this process). */
  notify(): void;
  /** Makes every attempt due now, and waits for them; returns how many (tests, without the loop). */
  pass(): Promise<number>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The message body (Standard Webhooks): type, the event's time, and its data as recorded. */
function messageBody(event: StoredEvent): string {
  return `{"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(iso(event.createdAt))},"data":${event.data}}`;
}

/**
 * Sends the queued webhook deliveries: claims due attempts, signs and POSTs each to its checked
 * address, and records the outcome: success, or the next attempt on the retry schedule, or,
 * after the last, failure. Which attempts it starts is fair (fair-share.ts), so that receivers
 * that hang delay only their own deliveries: one attempt at a time per webhook, at most
 * `endpointCap` per endpoint, senders given in turns between resellers, and no reseller given the
 * last free senders while it already holds as many.
 */
export function createDeliverer(o: DelivererOptions): Deliverer {
  const id = `webhooks-${randomUUID()}`;
  const timeoutMs = o.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const leaseMs = o.leaseMs ?? timeoutMs * 3;
  const retrySchedule = o.retrySchedule ?? RETRY_DELAYS_MS;
  const db = o.store.db;
  const endpointCap = o.endpointCap ?? ENDPOINT_CAP;
  /** Whose each attempt under way is (by webhook; the loop tracks the attempts themselves). */
  const underWay = new Map<string, { readonly resellerId: string; readonly endpoint: string }>();
  /** The webhooks seen at each endpoint (a webhook's URL never changes). */
  const webhooksAt = new Map<string, Set<string>>();
  /** When each reseller was last given a sender (a count of attempts started). */
  const lastServed = new Map<string, number>();
  let serial = 0;

  async function attempt(d: Delivery, hook: Webhook | undefined, event: StoredEvent | undefined) {
    if (!hook || !event) {
      // Its webhook was deleted, or its event pruned: nothing left to send.
      await dropDelivery(db, d);
      return;
    }
    const body = messageBody(event);
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'vrp-webhooks/2.0',
      'webhook-id': event.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signMessage(o.secretBox.open(hook.secretEnc), event.id, timestamp, body),
    };
    const deadline = Date.now() + timeoutMs;
    const signal = loop.workSignal;
    let outcome: AttemptOutcome;
    try {
      const url = new URL(hook.url);
      const address = await withDeadline(resolveTarget(url, o.lookup, o.allowPrivate), deadline);
      const status = await postWebhook({ url, address, headers, body, deadline, signal });
      outcome = { ok: true, httpStatus: status };
    } catch (err) {
      if (signal.aborted) {
        await releaseAttempt(db, d, id);
        return;
      }
      const failure = asFailure(err);
      if (failure.reason === 'internal')
        o.log.error({ err, webhookId: d.webhookId }, 'webhook attempt failed unexpectedly');
      // Attempts are counted when claimed, so one whose process died counts too, and it ends.
      const delay = retryDelayMs(d.attempts, retrySchedule);
      const next = delay === undefined ? null : o.clock.now() + delay;
      outcome = { ok: false, httpStatus: failure.httpStatus, error: failure.message, retryAt: next };
      o.metrics?.failed(failure.reason, next === null);
    }
    if (outcome.ok) o.metrics?.sent();
    const owned = await recordAttempt(db, d, id, outcome, o.clock.now());
    if (!owned)
      o.log.warn({ webhookId: d.webhookId, eventId: d.eventId }, 'webhook attempt outlived its lease');
  }

  function load(): Load {
    const byReseller = new Map<string, number>();
    const byEndpoint = new Map<string, number>();
    for (const a of underWay.values()) {
      byReseller.set(a.resellerId, (byReseller.get(a.resellerId) ?? 0) + 1);
      byEndpoint.set(a.endpoint, (byEndpoint.get(a.endpoint) ?? 0) + 1);
    }
    return { inFlight: underWay.size, byReseller, byEndpoint };
  }

  /** Claims what is due for the free senders, fairly, and starts them; returns how many it started. */
  async function claimAndStart(): Promise<number> {
    const free = o.concurrency - loop.running.size;
    if (free <= 0) return 0;
    // Woken after every job run: most wake-ups find nothing due, and one probe says so.
    const realNow = Date.now();
    if (!(await anyDue(db, { now: o.clock.now(), realNow }))) return 0;
    const current = load();
    // Left out of the query, so that the due attempts of others are what it finds.
    const exceptResellers = [...current.byReseller]
      .filter(([, held]) => !mayStart(held, free))
      .map(([r]) => r);
    const exceptWebhooks = new Set(loop.running.keys());
    for (const [endpoint, n] of current.byEndpoint) {
      if (n >= endpointCap) for (const w of webhooksAt.get(endpoint) ?? []) exceptWebhooks.add(w);
    }
    const candidates = await dueCandidates(db, {
      now: o.clock.now(),
      realNow,
      exceptWebhooks: [...exceptWebhooks],
      exceptResellers,
      limit: Math.max(32, o.concurrency * 4),
    });
    const contenders = candidates.map((c) => ({ ...c, endpoint: endpointOf(c.url) }));
    for (const c of contenders) {
      const at = webhooksAt.get(c.endpoint);
      if (at) at.add(c.webhookId);
      else webhooksAt.set(c.endpoint, new Set([c.webhookId]));
    }
    const picked = pickFair(contenders, current, { concurrency: o.concurrency, endpointCap, lastServed });
    const claimed = await claimDeliveries(o.store, {
      workerId: id,
      keys: picked,
      now: o.clock.now(),
      realNow,
      leaseUntil: realNow + leaseMs,
    });
    if (claimed.length === 0) return 0;
    const [hooks, events] = await Promise.all([
      webhooksById(
        db,
        claimed.map((d) => d.webhookId),
      ),
      eventsById(
        db,
        claimed.map((d) => d.eventId),
      ),
    ]);
    const whose = new Map(picked.map((c) => [c.webhookId, c]));
    for (const d of claimed) {
      // Only picked webhooks' deliveries are claimed; were one not, its lease would run out.
      const who = whose.get(d.webhookId);
      if (who === undefined) continue;
      const { resellerId, endpoint } = who;
      lastServed.set(resellerId, ++serial);
      underWay.set(d.webhookId, { resellerId, endpoint });
      const p = attempt(d, hooks.get(d.webhookId), events.get(d.eventId))
        .catch((err) => {
          // Its lease runs out and the attempt is made again.
          if (isStoreUnavailable(err)) o.log.warn({ error: String(err) }, 'webhooks: store unavailable');
          else o.log.error({ err, webhookId: d.webhookId }, 'webhook attempt could not be recorded');
        })
        .finally(() => underWay.delete(d.webhookId));
      loop.track(d.webhookId, p);
    }
    return claimed.length;
  }

  const loop = createPollLoop<string>({
    // Started some and senders are free: other webhooks may have attempts due too.
    tick: async () => (await claimAndStart()) > 0,
    signal: createJobSignal(),
    pollMs: o.pollMs ?? 1000,
    concurrency: o.concurrency,
    onError(err) {
      if (isStoreUnavailable(err)) o.log.warn({ error: String(err) }, 'webhooks: store unavailable; waiting');
      else o.log.error({ err }, 'webhooks: delivery loop error');
    },
  });

  return {
    id,
    start: loop.start,
    stop: (graceMs = 2000) => loop.stop({ graceMs }),
    notify: loop.wake,
    async pass() {
      let total = 0;
      for (;;) {
        const started = await claimAndStart();
        total += started;
        if (started === 0 && loop.running.size === 0) return total;
        if (started === 0) await Promise.race(loop.running.values());
      }
    },
  };
}

function asFailure(err: unknown): SendFailure {
  if (err instanceof SendFailure) return err;
  if (err instanceof TargetRefused) return new SendFailure('refused', err.message);
  if (err instanceof DeadlineExceeded) return new SendFailure('timeout', err.message);
  return new SendFailure('internal', 'internal error while sending; the provider has the details');
}

class DeadlineExceeded extends Error {}

/** `p`, or a DeadlineExceeded at `deadline` (a resolver that does not answer). */
async function withDeadline<T>(p: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new DeadlineExceeded('the host name was not resolved in time')),
          Math.max(0, deadline - Date.now()),
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
