import pg from 'pg';

/** The channel migration 015's trigger notifies when a job becomes queued. */
const JOBS_CHANNEL = 'vrp_jobs';

/** How the listener reports what happens to its connection. */
export interface ListenerLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  /** Each notification on the channel, `own` or not. */
  debug?(obj: { own: boolean }, msg: string): void;
}

export interface JobNotifications {
  /** Stops listening and closes the connection. */
  close(): Promise<void>;
}

/**
 * Calls `onQueued` when another process queues a job on this PostgreSQL database (LISTEN on
 * migration 015's channel), so that a worker sleeps until there is work instead of polling.
 * Notifications sent by this process's own connections (`ownBackends`, the pool's backend
 * process ids) are ignored: the process wakes its worker itself, without a round trip.
 *
 * The connection is its own (a LISTEN holds it), not one of the pool's. When it is lost (the
 * database restarts), it is made again, after 0.5 s and then up to 30 s between tries; once
 * listening again, `onQueued` is called once, since jobs may have been queued meanwhile.
 */
export function listenForQueuedJobs(
  connectionString: string,
  ownBackends: ReadonlySet<number>,
  onQueued: () => void,
  log: ListenerLog,
  options: { retryMs?: number; maxRetryMs?: number } = {},
): JobNotifications {
  const firstRetry = options.retryMs ?? 500;
  const maxRetry = options.maxRetryMs ?? 30_000;
  let closed = false;
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryMs = firstRetry;
  let lost = false;

  function retry(err: unknown) {
    if (closed || retryTimer) return;
    client?.removeAllListeners();
    client?.on('error', () => {});
    client?.end().catch(() => {});
    client = undefined;
    if (!lost) log.warn({ error: String(err) }, 'job notifications: connection lost; reconnecting');
    lost = true;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, retryMs);
    retryMs = Math.min(maxRetry, retryMs * 2);
  }

  async function connect() {
    const c = new pg.Client({ connectionString, connectionTimeoutMillis: 5000 });
    client = c;
    c.on('error', retry);
    c.on('end', () => retry(new Error('connection ended')));
    c.on('notification', (n) => {
      if (n.channel !== JOBS_CHANNEL) return;
      const own = ownBackends.has(n.processId);
      log.debug?.({ own }, 'job notification');
      if (!own) onQueued();
    });
    try {
      await c.connect();
      await c.query(`listen ${JOBS_CHANNEL}`);
    } catch (err) {
      if (client === c) retry(err);
      return;
    }
    if (closed) {
      await c.end().catch(() => {});
      return;
    }
    retryMs = firstRetry;
    if (lost) {
      lost = false;
      log.info({}, 'job notifications: listening again');
      onQueued();
    }
  }

  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      const c = client;
      client = undefined;
      if (!c) return;
      c.removeAllListeners();
      c.on('error', () => {});
      await c.end().catch(() => {});
    },
  };
}
