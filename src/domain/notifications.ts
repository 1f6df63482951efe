/**
 * Notifications to the operators (docs/design/contract.md#notifications-to-the-operators): what
 * is notified, the thresholds, and how a batch reads as an email and as an operator webhook's
 * message. Pure: the store keeps the outbox, jobs/notify-flusher.ts sends it.
 */
import { type QuotaResource, quotaAmount } from './quotas.ts';

/** What a notification is about; a `_cleared` kind says that a lasting condition ended. */
export const NOTIFICATION_KINDS = [
  'job.failed',
  'host.unreachable',
  'host.reachable',
  'host.full',
  'host.full_cleared',
  'quota.near',
  'quota.near_cleared',
  'webhook.failing',
  'webhook.failing_cleared',
  'service.paused',
  'service.paused_cleared',
] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** Headings of each kind in a message, in the order of NOTIFICATION_KINDS. */
const HEADINGS: Readonly<Record<NotificationKind, string>> = {
  'job.failed': 'Jobs that failed after their last attempt',
  'host.unreachable': 'Hosts unreachable',
  'host.reachable': 'Hosts answering again',
  'host.full': 'Hosts over 90 % of a resource',
  'host.full_cleared': 'Hosts back under 90 % of a resource',
  'quota.near': 'Resellers at 90 % of a quota',
  'quota.near_cleared': 'Resellers back under 90 % of a quota',
  'webhook.failing': "Resellers' webhooks failing for a day",
  'webhook.failing_cleared': "Resellers' webhooks delivering again",
  'service.paused': 'Servers paused by a failed write to their disk',
  'service.paused_cleared': 'Servers no longer paused',
};

/** A host is full on a resource when more than this share of it is allocated. */
export const HOST_FULL_SHARE = 0.9;
/** A reseller is near a quota when its use is at least this share of the cap. */
export const QUOTA_NEAR_SHARE = 0.9;
/** A reseller's webhook is failing once its receiver has taken no delivery for this long. */
export const WEBHOOK_FAILING_MS = 86_400_000;
/** How many notifications of one kind a message lists by name; the rest are counted. */
export const LISTED_PER_KIND = 200;

/** A notification to record: its kind, what it is about, one line for a person, and details. */
export interface NewNotification {
  readonly kind: NotificationKind;
  readonly subject: string;
  readonly summary: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** A recorded notification. */
export interface Notification extends NewNotification {
  readonly id: string;
  readonly createdAt: number;
  /** The batch it went out in; null until the next flush. */
  readonly batch: number | null;
}

/** The resources of a host, as the host records count them (allocated to VMs). */
export const HOST_RESOURCES = ['cpu', 'ram', 'disk'] as const;
export type HostResource = (typeof HOST_RESOURCES)[number];

const HOST_RESOURCE_NAMES: Readonly<Record<HostResource, string>> = {
  cpu: 'CPU',
  ram: 'memory',
  disk: 'disk',
};

/** A host's capacity and what is allocated of it, per resource. */
export type HostLoad = Readonly<Record<HostResource, { readonly capacity: number; readonly used: number }>>;

/** The resources of which more than 90 % is allocated (a resource the host does not offer never is). */
export function hostFullResources(load: HostLoad): HostResource[] {
  return HOST_RESOURCES.filter(
    (r) => load[r].capacity > 0 && load[r].used > load[r].capacity * HOST_FULL_SHARE,
  );
}

/** The caps a reseller uses 90 % or more of (a cap of 0 allows nothing by design, and is left out). */
export function quotaNearResources(
  quota: Readonly<Record<QuotaResource, number | null>>,
  use: Readonly<Record<QuotaResource, number>>,
  resources: readonly QuotaResource[],
): QuotaResource[] {
  return resources.filter((r) => {
    const cap = quota[r];
    return cap !== null && cap > 0 && use[r] >= cap * QUOTA_NEAR_SHARE;
  });
}

const percent = (used: number, capacity: number) => `${Math.round((used / capacity) * 100)} %`;

export function jobFailedNotification(job: {
  readonly id: string;
  readonly action: string;
  readonly serviceId: string;
  readonly resellerId: string;
  readonly domain: string | null;
  readonly error: string;
}): NewNotification {
  const what = job.action.replaceAll('_', ' ');
  const service = job.domain ?? job.serviceId;
  return {
    kind: 'job.failed',
    subject: job.id,
    summary: `${what} of ${service} failed (job ${job.id}): ${job.error}`,
    data: {
      job_id: job.id,
      action: job.action,
      service_id: job.serviceId,
      reseller_id: job.resellerId,
      domain: job.domain,
      error: job.error,
    },
  };
}

export function hostReachabilityNotification(
  host: { readonly id: string; readonly name: string },
  reachable: boolean,
): NewNotification {
  return {
    kind: reachable ? 'host.reachable' : 'host.unreachable',
    subject: host.id,
    summary: reachable ? `host ${host.name} answers again` : `host ${host.name} is unreachable`,
    data: { host_id: host.id, host: host.name },
  };
}

export function hostFullNotification(
  host: { readonly id: string; readonly name: string },
  resource: HostResource,
  load: { readonly capacity: number; readonly used: number },
  full: boolean,
): NewNotification {
  const what = `${HOST_RESOURCE_NAMES[resource]} of host ${host.name}`;
  const share = percent(load.used, load.capacity);
  return {
    kind: full ? 'host.full' : 'host.full_cleared',
    subject: host.id,
    summary: full
      ? `${what} is ${share} allocated (${load.used} of ${load.capacity})`
      : `${what} is back under 90 % (${share})`,
    data: { host_id: host.id, host: host.name, resource, used: load.used, capacity: load.capacity },
  };
}

export function quotaNearNotification(
  reseller: { readonly id: string; readonly name: string },
  resource: QuotaResource,
  cap: number | null,
  used: number,
  near: boolean,
): NewNotification {
  const of =
    cap === null ? 'no quota any more' : `${quotaAmount(resource, used)} of ${quotaAmount(resource, cap)}`;
  return {
    kind: near ? 'quota.near' : 'quota.near_cleared',
    subject: reseller.id,
    summary: near
      ? `reseller ${reseller.name} uses ${of} (${resource} quota)`
      : `reseller ${reseller.name} is back under 90 % of its ${resource} quota (${of})`,
    data: { reseller_id: reseller.id, reseller: reseller.name, resource, used, quota: cap },
  };
}

/**
 * A server its hypervisor paused because a write to its disk failed (`disk_error` undefined:
 * it runs again): `no_space` when the host's storage had no room for it.
 */
export function servicePausedNotification(
  service: { readonly id: string; readonly resellerId: string; readonly domain: string },
  host: { readonly id: string; readonly name: string },
  pause: { readonly disk: string; readonly error: 'no_space' | 'io_error' } | undefined,
): NewNotification {
  const server = `server ${service.domain} on host ${host.name}`;
  const why =
    pause?.error === 'no_space'
      ? `its disk ${pause.disk} had no room on the host's storage (it resumes once there is room)`
      : `a write to its disk${pause?.disk ? ` ${pause.disk}` : ''} failed`;
  return {
    kind: pause ? 'service.paused' : 'service.paused_cleared',
    subject: service.id,
    summary: pause ? `${server} is paused: ${why}` : `${server} is no longer paused`,
    data: {
      service_id: service.id,
      reseller_id: service.resellerId,
      domain: service.domain,
      host_id: host.id,
      host: host.name,
      ...(pause ? { disk: pause.disk, disk_error: pause.error } : {}),
    },
  };
}

export function webhookFailingNotification(
  hook: { readonly id: string; readonly url: string; readonly resellerId: string; readonly reseller: string },
  failing: boolean,
  lastError: string | null,
): NewNotification {
  return {
    kind: failing ? 'webhook.failing' : 'webhook.failing_cleared',
    subject: hook.id,
    summary: failing
      ? `webhook ${hook.url} of reseller ${hook.reseller} has taken no delivery for a day${lastError ? ` (last error: ${lastError})` : ''}`
      : `webhook ${hook.url} of reseller ${hook.reseller} takes deliveries again`,
    data: { webhook_id: hook.id, url: hook.url, reseller_id: hook.resellerId, reseller: hook.reseller },
  };
}

/** What one message carries: how many of each kind, and the notifications listed (oldest first). */
export interface Digest {
  readonly counts: ReadonlyMap<NotificationKind, number>;
  readonly listed: readonly Notification[];
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The email of a digest: a subject with the counts, and a body grouped by kind. */
export function digestEmail(d: Digest): { subject: string; text: string } {
  const kinds = NOTIFICATION_KINDS.filter((k) => (d.counts.get(k) ?? 0) > 0);
  const subject = `[vrp] ${kinds.map((k) => `${HEADINGS[k].toLowerCase()}: ${d.counts.get(k)}`).join('; ')}`;
  const sections = kinds.map((k) => {
    const count = d.counts.get(k) ?? 0;
    const mine = d.listed.filter((n) => n.kind === k).slice(0, LISTED_PER_KIND);
    const lines = mine.map((n) => `- ${iso(n.createdAt)} ${n.summary}`);
    const more = count - mine.length;
    if (more > 0) lines.push(`- ... and ${more} more (GET OPS/notifications lists them)`);
    return `${HEADINGS[k]} (${count}):\n${lines.join('\n')}`;
  });
  return { subject, text: `${sections.join('\n\n')}\n` };
}

/** The Standard Webhooks body of a digest. */
export function digestWebhookBody(d: Digest, batch: number, now: number): string {
  const counts: Record<string, number> = {};
  for (const k of NOTIFICATION_KINDS) {
    const n = d.counts.get(k);
    if (n) counts[k] = n;
  }
  return JSON.stringify({
    type: 'operator.notifications',
    timestamp: iso(now),
    data: {
      batch,
      counts,
      notifications: d.listed.map((n) => ({
        notification_id: n.id,
        kind: n.kind,
        subject: n.subject,
        summary: n.summary,
        data: n.data,
        created_at: iso(n.createdAt),
      })),
    },
  });
}

/** The wait before the next attempt after `attempts` failed ones: the window doubled each time, at most an hour. */
export function notifyRetryDelayMs(attempts: number, windowMs: number): number {
  return Math.min(windowMs * 2 ** Math.max(0, attempts - 1), 3_600_000);
}

export function isNotificationKind(value: string): value is NotificationKind {
  return NOTIFICATION_KINDS.some((k) => k === value);
}
