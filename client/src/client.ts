/** createClient: one typed method per operation of the reseller API (docs/api.md). */

import type { operations } from './generated/openapi.ts';
import { createTransport, type TransportOptions } from './transport.ts';
import type {
  Accepted,
  Body,
  Data,
  Order,
  ReinstallRequest,
  RescueLogin,
  ScheduleRequest,
  Status,
  UpgradeAmounts,
  WebhookRequest,
} from './types.ts';
import { createFeedTail, type WaitApi, type WaitOptions, waitForStatus } from './wait.ts';

export interface ClientOptions {
  /** `{base_url}`: `https://HOST/vps_reseller_provider/public`. */
  baseUrl: string;
  /** The application's client id and secret (OAuth 2.0 client credentials). */
  clientId: string;
  clientSecret: string;
  /** The fetch to use (default: the platform's `fetch`). */
  fetch?: typeof fetch;
  /** The client's clock (epoch ms, default Date.now): when its token is due for renewal. */
  now?: () => number;
  /** The longest Retry-After (seconds) waited out before a 429 is retried once (default 60). */
  maxRetryAfterSeconds?: number;
}

/** Per-call options. */
export interface CallOptions {
  signal?: AbortSignal | undefined;
}

const ids = (...parts: string[]) => parts.map(encodeURIComponent).join('/');

/**
 * A client of the reseller API. It gets its token itself (and a new one before it expires, or
 * once on a 401), asks for the variant B envelope and answers its `data`; every failure is a
 * VrpError with the HTTP status, the `error_code` and the request id.
 */
export function createClient(options: ClientOptions) {
  const { call } = createTransport(options satisfies TransportOptions);

  // Typed by the operation's id in the generated document: no answer or body type is written by hand.
  const get = async <Op extends keyof operations>(
    _op: Op,
    path: string,
    o?: CallOptions,
    query?: Record<string, string | number | undefined>,
  ) => (await call<Data<Op>>({ method: 'GET', path, query, signal: o?.signal })).data;
  const post = async <Op extends keyof operations>(
    _op: Op,
    path: string,
    body: Body<Op>,
    o?: CallOptions,
    headers?: Record<string, string>,
  ) => (await call<Data<Op>>({ method: 'POST', path, body, headers, signal: o?.signal })).data;
  /** An operation that answers `[]`: what it queued and what the server said. */
  const act = async <Op extends keyof operations>(
    _op: Op,
    path: string,
    body: Body<Op>,
    o?: CallOptions,
  ): Promise<Accepted> => {
    const answer = await call<[]>({ method: 'POST', path, body, signal: o?.signal });
    return { jobId: answer.headers.get('x-job-id'), message: answer.message };
  };
  const service = (id: string, rest?: string) => `service/${ids(id)}${rest ? `/${rest}` : ''}`;

  const api = {
    /** Checks the credentials and the connection; resolves when both work. */
    async testConnection(o?: CallOptions): Promise<void> {
      await post('testConnection', 'test-connection', {}, o);
    },
    version: (o?: CallOptions) => get('version', 'version', o),
    products: (o?: CallOptions) => get('products', 'products', o),
    plans: (productId: string, o?: CallOptions) => get('plans', `product/${ids(productId)}/plans`, o),
    /**
     * Orders a service (`pending`; provision it with `create`). With an idempotencyKey, the same
     * order sent again within 24 h answers the first answer and creates nothing.
     */
    createOrder: (order: Order, o: CallOptions & { idempotencyKey?: string } = {}) =>
      post(
        'createOrder',
        'service/create-order',
        order,
        o,
        o.idempotencyKey === undefined ? undefined : { 'idempotency-key': o.idempotencyKey },
      ),
    create: (id: string, o?: CallOptions) => act('create', service(id, 'create'), {}, o),
    terminate: (id: string, o?: CallOptions) => act('terminate', service(id, 'terminate'), {}, o),
    suspend: (id: string, reason?: string, o?: CallOptions) =>
      act('suspend', service(id, 'suspend'), reason === undefined ? {} : { suspend_reason: reason }, o),
    unsuspend: (id: string, o?: CallOptions) => act('unsuspend', service(id, 'unsuspend'), {}, o),
    start: (id: string, o?: CallOptions) => act('start', service(id, 'start'), {}, o),
    stop: (id: string, o?: CallOptions) => act('stop', service(id, 'stop'), {}, o),
    restart: (id: string, o?: CallOptions) => act('restart', service(id, 'restart'), {}, o),
    upgrade: (id: string, a: UpgradeAmounts, o?: CallOptions) =>
      act(
        'upgrade',
        service(id, 'upgrade'),
        { CPU: a.cpu, RAM: a.ram, HDD: a.hdd, IP: a.ip, BACKUP: a.backup },
        o,
      ),
    resetPassword: (id: string, password: string, o?: CallOptions) =>
      act('resetPassword', service(id, 'reset-password'), { password }, o),
    /**
     * A one-time link to the server's console in a browser (running or in rescue): hand `url`
     * to the customer's browser; it opens once, until `expiresAt`.
     */
    openConsole: async (id: string, o?: CallOptions): Promise<{ url: string; expiresAt: string }> => {
      const link = await post('openConsole', service(id, 'console'), {}, o);
      return { url: link.url, expiresAt: link.expires_at };
    },
    /** Rebuilds the server's disk from a template (its data is lost); addresses and power state stay. */
    reinstall: (id: string, r: ReinstallRequest, o?: CallOptions) =>
      act(
        'reinstall',
        service(id, 'reinstall'),
        {
          template_id: r.templateId,
          ...(r.password === undefined ? {} : { password: r.password }),
          ...(r.sshKeys === undefined ? {} : { ssh_keys: [...r.sshKeys] }),
        },
        o,
      ),
    /**
     * Boots the rescue system with the server's disk attached; answers its login (the password is
     * shown only here) and the job's id. It ends by itself after the provider's limit (details'
     * `rescue_until`), or with `unrescue`.
     */
    rescue: async (id: string, o?: CallOptions): Promise<RescueLogin & { jobId: string | null }> => {
      const answer = await call<RescueLogin>({
        method: 'POST',
        path: service(id, 'rescue'),
        body: {} satisfies Body<'rescue'>,
        signal: o?.signal,
      });
      return { ...answer.data, jobId: answer.headers.get('x-job-id') };
    },
    /** Leaves the rescue system: the server boots its own system again. */
    unrescue: (id: string, o?: CallOptions) => act('unrescue', service(id, 'unrescue'), {}, o),
    details: (id: string, o?: CallOptions) => get('details', service(id, 'details'), o),
    status: (id: string, o?: CallOptions) => get('status', service(id, 'status'), o),
    /** The service's jobs, newest first. */
    jobs: (id: string, o: CallOptions & { limit?: number } = {}) =>
      get('jobs', service(id, 'jobs'), o, { limit: o.limit }),
    backups: (id: string, o?: CallOptions) => get('backups', service(id, 'backups'), o),
    createBackup: (id: string, o?: CallOptions) => act('createBackup', service(id, 'backup/create'), {}, o),
    restoreBackup: (id: string, backupId: string, o?: CallOptions) =>
      act('restoreBackup', service(id, `backup/restore/${ids(backupId)}`), {}, o),
    deleteBackup: (id: string, backupId: string, o?: CallOptions) =>
      act('deleteBackup', service(id, `backup/delete/${ids(backupId)}`), {}, o),
    backupSchedules: (id: string, o?: CallOptions) =>
      get('backupSchedules', service(id, 'backup-schedule'), o),
    /** Takes effect at once (no job); the same time and days again adds nothing. */
    createBackupSchedule: (id: string, s: ScheduleRequest, o?: CallOptions) =>
      act(
        'createBackupSchedule',
        service(id, 'backup-schedule/create'),
        { BsTime: s.time, BSDays: typeof s.days === 'string' ? s.days : s.days.join(',') },
        o,
      ),
    deleteBackupSchedule: (id: string, scheduleId: string, o?: CallOptions) =>
      act('deleteBackupSchedule', service(id, `backup-schedule/delete/${ids(scheduleId)}`), {}, o),
    /**
     * The PTR record of each of the service's addresses (IPv4, then IPv6): the one set, else the
     * provider's default, else null. 400 `rdns_unavailable` where the provider has no DNS server.
     */
    getRdns: (id: string, o?: CallOptions) => get('rdns', service(id, 'rdns'), o),
    /**
     * Sets the PTR record of one of the service's addresses (`ptr` null: back to the default);
     * takes effect at once (no job) and answers every address's PTR. 400 `ip_not_of_service`,
     * `invalid_ptr`; 502 `rdns_backend_failed` when the provider's DNS server fails (nothing changed).
     */
    setRdns: (id: string, ip: string, ptr: string | null, o?: CallOptions) =>
      post('setRdns', service(id, 'rdns'), { ip, ptr }, o),
    /** The reseller's events after `after` (an event_id), oldest first; `limit` 1 to 1000 (default 100). */
    events: (q: { after?: string | undefined; limit?: number | undefined } = {}, o?: CallOptions) =>
      get('events', 'events', o, { after: q.after, limit: q.limit }),
    webhooks: (o?: CallOptions) => get('webhooks', 'webhooks', o),
    /** Registers a receiver; the answer's `secret` (shown only now) verifies its deliveries. */
    createWebhook: (w: WebhookRequest, o?: CallOptions) => post('createWebhook', 'webhooks', w, o),
    deleteWebhook: async (webhookId: string, o?: CallOptions): Promise<void> => {
      await post('deleteWebhook', `webhooks/${ids(webhookId)}/delete`, {}, o);
    },
    /** The reseller's quota and what its services use now. */
    usage: (o?: CallOptions) => get('usage', 'usage', o),
  };

  const waitApi: WaitApi = {
    status: (id, signal) => api.status(id, { signal }),
    events: (q, signal) => api.events(q, { signal }),
  };
  const tail = createFeedTail(waitApi);

  return {
    ...api,
    /**
     * Resolves with the status once the service is `status` with no job running or queued,
     * following the events feed (or polling status where the feed is not available). Throws
     * VrpError `unreachable_status` as soon as the service is `failed` or `terminated` (unless
     * wanted), or a job of it failed and it settled elsewhere; `wait_timeout` after timeoutMs.
     */
    waitForStatus: (id: string, status: Status, o?: WaitOptions) =>
      waitForStatus(waitApi, tail, id, status, o),
  };
}

/** The client createClient makes. */
export type VrpClient = ReturnType<typeof createClient>;
