import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../domain/clock.ts';
import { messageOf } from '../domain/errors.ts';
import { digestEmail, digestWebhookBody, notifyRetryDelayMs } from '../domain/notifications.ts';
import type { SecretBox } from '../domain/secret-box.ts';
import type { Store } from '../store/database.ts';
import {
  addChannel,
  type Channel,
  claimChannel,
  digestOf,
  dueChannels,
  formBatch,
  lastBatch,
  pruneNotifications,
  recordChannelFailed,
  recordChannelSent,
  removeChannel,
  renewChannel,
} from '../store/repos/notifications.ts';
import { operatorWebhooksById } from '../store/repos/operator-webhooks.ts';
import type { HostLookup } from '../webhooks/lookup.ts';
import { postWebhook } from '../webhooks/send.ts';
import { signMessage } from '../webhooks/signature.ts';
import { resolveTarget } from '../webhooks/target.ts';
import { sweepConditions } from './notify-conditions.ts';
import type { MailSender } from './notify-mail.ts';
import { createPeriodic } from './periodic.ts';

/** How long an operator webhook has to answer. */
const WEBHOOK_TIMEOUT_MS = 10_000;
/**
 * How long a process holds a channel it sends to without renewing its hold. A message still
 * being sent is held again every third of this: an SMTP exchange is bounded by quiet spells
 * only (notify-mail.ts), so a slow server can take longer than any fixed lease, and another
 * process must not send the same message meanwhile.
 */
const CHANNEL_LEASE_MS = 60_000;
/** Notifications are listed by the operator API this long after they were sent, then pruned. */
export const NOTIFICATION_RETENTION_MS = 30 * 86_400_000;

export interface FlusherOptions {
  readonly store: Store;
  /** The server's clock: windows, retries and conditions. Leases and signatures are in real time. */
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  readonly secretBox: SecretBox;
  readonly lookup: HostLookup;
  /** Operator webhooks may reach private addresses (VRP_WEBHOOK_ALLOW_PRIVATE), as resellers' may. */
  readonly allowPrivate: boolean;
  /** Undefined: email is not set up (VRP_SMTP_URL). */
  readonly mailer: MailSender | undefined;
  /** At most one message per channel per this long (VRP_NOTIFY_WINDOW). */
  readonly windowMs: number;
  /** Time between passes (default: a quarter of the window, at least 1 s). */
  readonly intervalMs?: number;
  /** How long a claim on a channel lasts unless renewed (real time; default 60 s). Tests shorten it. */
  readonly leaseMs?: number;
}

export interface NotificationFlusher {
  start(): void;
  stop(): Promise<void>;
  /**
   * One pass: looks at the lasting conditions (once per window), forms a batch if the window is
   * over, and sends each channel behind it one message. Returns what it sent and what failed
   * (channels: `email` or an operator webhook's id). Tests call it instead of waiting.
   */
  pass(): Promise<{ readonly sent: string[]; readonly failed: string[] }>;
}

/**
 * Sends the operators' notifications, batched: a pass forms a batch of what the outbox holds
 * (at most one batch per window, formed by exactly one process), then sends every channel (the
 * email recipients, each operator webhook) one message listing what it has not been sent yet,
 * grouped by kind with counts. A failed message is retried with a growing wait, and the next
 * one that goes out covers everything since the last that did. Jobs only write the outbox, so
 * an SMTP server or receiver that fails or hangs never holds a job.
 */
export function createNotificationFlusher(o: FlusherOptions): NotificationFlusher {
  const workerId = `notify-${randomUUID()}`;
  const leaseMs = o.leaseMs ?? CHANNEL_LEASE_MS;
  const db = o.store.db;
  let emailAdded = false;
  let sweptAt = Number.NEGATIVE_INFINITY;

  async function sendEmail(c: Channel, upTo: number): Promise<void> {
    if (!o.mailer) {
      // Email was set up once and is no longer: nothing to send it with.
      await removeChannel(db, c.channel);
      return;
    }
    const digest = await digestOf(db, c.sentBatch, upTo);
    await o.mailer.send(digestEmail(digest));
  }

  async function sendWebhook(c: Channel, upTo: number): Promise<void> {
    const hook = (await operatorWebhooksById(db, [c.channel])).get(c.channel);
    if (!hook) {
      await removeChannel(db, c.channel);
      return;
    }
    const digest = await digestOf(db, c.sentBatch, upTo);
    const body = digestWebhookBody(digest, upTo, o.clock.now());
    const id = `ntf_${c.sentBatch + 1}_${upTo}`;
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'vrp-webhooks/2.0',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signMessage(o.secretBox.open(hook.secretEnc), id, timestamp, body),
    };
    const url = new URL(hook.url);
    const deadline = Date.now() + WEBHOOK_TIMEOUT_MS;
    const address = await resolveTarget(url, o.lookup, o.allowPrivate);
    await postWebhook({ url, address, headers, body, deadline });
  }

  /** Sends the channel its message if this process claims it; true sent, false failed, undefined not claimed. */
  async function sendTo(c: Channel, upTo: number): Promise<boolean | undefined> {
    const realNow = Date.now();
    const claimed = await claimChannel(db, {
      channel: c.channel,
      workerId,
      upTo,
      realNow,
      leaseUntil: realNow + leaseMs,
    });
    if (!claimed) return undefined;
    const renewal = holdWhileSending(c.channel);
    try {
      if (c.kind === 'email') await sendEmail(c, upTo);
      else await sendWebhook(c, upTo);
    } catch (err) {
      const message = messageOf(err);
      const next = o.clock.now() + notifyRetryDelayMs(c.attempts + 1, o.windowMs);
      o.log.warn(
        {
          channel: c.kind === 'email' ? 'email' : `webhook ${c.channel}`,
          attempts: c.attempts + 1,
          error: message,
        },
        'notifications: message not sent; it will be tried again',
      );
      await renewal.stop();
      await recordChannelFailed(db, c.channel, workerId, message, next);
      return false;
    }
    await renewal.stop();
    await recordChannelSent(db, c.channel, workerId, upTo, o.clock.now());
    return true;
  }

  /** Renews this process's hold on the channel every third of the lease until stopped. */
  function holdWhileSending(channel: string): { stop(): Promise<void> } {
    let renewing: Promise<unknown> = Promise.resolve();
    const timer = setInterval(
      () => {
        renewing = renewing.then(async () => {
          try {
            if (!(await renewChannel(db, channel, workerId, Date.now() + leaseMs)))
              o.log.warn({ channel }, 'notifications: the hold on a channel was lost while sending to it');
          } catch (err) {
            o.log.warn(
              { channel, error: messageOf(err) },
              'notifications: the hold on a channel could not be renewed',
            );
          }
        });
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    timer.unref();
    return {
      async stop() {
        clearInterval(timer);
        await renewing;
      },
    };
  }

  async function pass() {
    const now = o.clock.now();
    if (o.mailer && !emailAdded) {
      await addChannel(db, 'email', 'email', now);
      emailAdded = true;
    }
    if (now - sweptAt >= o.windowMs) {
      sweptAt = now;
      await sweepConditions(db, now);
      await pruneNotifications(db, now - NOTIFICATION_RETENTION_MS);
    }
    await formBatch(db, now, o.windowMs);
    const upTo = await lastBatch(db);
    const due = await dueChannels(db, { now, realNow: Date.now(), windowMs: o.windowMs, upTo });
    const results = await Promise.all(due.map(async (c) => ({ c, ok: await sendTo(c, upTo) })));
    return {
      sent: results.filter((r) => r.ok === true).map((r) => r.c.channel),
      failed: results.filter((r) => r.ok === false).map((r) => r.c.channel),
    };
  }

  const intervalMs = o.intervalMs ?? Math.max(1000, Math.floor(o.windowMs / 4));
  // The first pass waits an interval: a process starting has better things to do than sweep.
  const periodic = createPeriodic({
    name: 'notifications',
    intervalMs,
    firstDelayMs: intervalMs,
    log: o.log,
    pass,
  });
  return {
    start: periodic.start,
    async stop() {
      await periodic.stop();
      o.mailer?.close();
    },
    pass,
  };
}
