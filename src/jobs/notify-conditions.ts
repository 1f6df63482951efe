import type { Kysely } from 'kysely';
import {
  type HostResource,
  hostFullNotification,
  hostFullResources,
  type NewNotification,
  quotaNearNotification,
  quotaNearResources,
  servicePausedNotification,
  WEBHOOK_FAILING_MS,
  webhookFailingNotification,
} from '../domain/notifications.ts';
import { QUOTA_RESOURCES, type QuotaResource } from '../domain/quotas.ts';
import type { DiskErrorPause } from '../drivers/driver.ts';
import { hostLoads, resellersWithQuota, webhookFailures } from '../store/repos/notification-watch.ts';
import { conditionsInForce, endCondition, startCondition } from '../store/repos/notifications.ts';
import { findQuota, quotaUse } from '../store/repos/quotas.ts';
import { webhooksById } from '../store/repos/webhooks.ts';
import type { Database } from '../store/schema.ts';

/**
 * Brings the conditions in force under `prefix` to what `observe` sees: each one observed and
 * not in force starts (and is notified), each in force and no longer observed ends (and is
 * notified). Starting and ending are conditional writes, so a condition is notified once however
 * many processes look. The conditions in force are read before the observation, and one is
 * ended only if it is still the one read (in force since the same time): a condition another
 * process starts meanwhile, on what it observed later than this one did, is never ended on this
 * one's older observation (every worker process sweeps, and a slow sweep would otherwise end
 * what a faster one just started: a flap of notifications).
 */
async function reconcile<Seen>(
  db: Kysely<Database>,
  prefix: string,
  observe: () => Promise<{ readonly seen: Seen; readonly observed: ReadonlyMap<string, NewNotification> }>,
  ended: (key: string, seen: Seen) => Promise<NewNotification>,
  now: number,
): Promise<string[]> {
  // Exactly the prefix's (LIKE takes a `_` or `%` in a host's id for a wildcard).
  const inForce = new Map([...(await conditionsInForce(db, prefix))].filter(([k]) => k.startsWith(prefix)));
  const { seen, observed } = await observe();
  const started: string[] = [];
  for (const [key, n] of observed)
    if (!inForce.has(key)) {
      await startCondition(db, key, n, now);
      started.push(key);
    }
  for (const [key, since] of inForce)
    if (!observed.has(key)) await endCondition(db, key, since, await ended(key, seen), now);
  return started;
}

const isHostResource = (r: string | undefined): r is HostResource =>
  r === 'cpu' || r === 'ram' || r === 'disk';
const isQuotaResource = (r: string | undefined): r is QuotaResource => QUOTA_RESOURCES.some((q) => q === r);

/** Hosts more than 90 % allocated on a resource: `host.full:{host}:{resource}`. */
async function hostsFull(db: Kysely<Database>, now: number): Promise<void> {
  await reconcile(
    db,
    'host.full:',
    async () => {
      const hosts = await hostLoads(db);
      const observed = new Map<string, NewNotification>();
      for (const h of hosts) {
        for (const r of hostFullResources(h.load))
          observed.set(`host.full:${h.id}:${r}`, hostFullNotification(h, r, h.load[r], true));
      }
      return { seen: hosts, observed };
    },
    async (key, hosts) => {
      const [, id = '', resource] = key.split(':');
      const host = hosts.find((h) => h.id === id);
      const r = isHostResource(resource) ? resource : 'cpu';
      const load = host?.load[r] ?? { capacity: 0, used: 0 };
      return hostFullNotification(host ?? { id, name: id }, r, load, false);
    },
    now,
  );
}

/** Resellers at 90 % of a cap: `quota.near:{reseller}:{resource}`. */
async function quotasNear(db: Kysely<Database>, now: number): Promise<void> {
  await reconcile(
    db,
    'quota.near:',
    async () => {
      const resellers = await resellersWithQuota(db);
      const observed = new Map<string, NewNotification>();
      const known = new Map<
        string,
        { quota: Awaited<ReturnType<typeof findQuota>>; use: Awaited<ReturnType<typeof quotaUse>> }
      >();
      for (const r of resellers) {
        const quota = await findQuota(db, r.id);
        if (!quota) continue;
        const use = await quotaUse(db, r.id);
        known.set(r.id, { quota, use });
        for (const res of quotaNearResources(quota, use, QUOTA_RESOURCES))
          observed.set(
            `quota.near:${r.id}:${res}`,
            quotaNearNotification(r, res, quota[res], use[res], true),
          );
      }
      return { seen: { resellers, known }, observed };
    },
    async (key, { resellers, known }) => {
      const [, id = '', resource] = key.split(':');
      const r = isQuotaResource(resource) ? resource : 'services';
      const seen = known.get(id);
      const name = resellers.find((x) => x.id === id)?.name ?? id;
      const use = seen?.use ?? (await quotaUse(db, id));
      return quotaNearNotification({ id, name }, r, seen?.quota?.[r] ?? null, use[r], false);
    },
    now,
  );
}

/** Resellers' webhooks whose receiver has taken no delivery for a day: `webhook.failing:{webhook}`. */
async function webhooksFailing(db: Kysely<Database>, now: number): Promise<void> {
  await reconcile(
    db,
    'webhook.failing:',
    async () => {
      const failures = await webhookFailures(db, now, WEBHOOK_FAILING_MS);
      const observed = new Map<string, NewNotification>();
      for (const f of failures) {
        if (f.failingSince !== null && f.failingSince <= now - WEBHOOK_FAILING_MS && !f.deliveredRecently)
          observed.set(`webhook.failing:${f.id}`, webhookFailingNotification(f, true, f.lastError));
      }
      return { seen: failures, observed };
    },
    async (key, failures) => {
      const id = key.slice('webhook.failing:'.length);
      const known = failures.find((f) => f.id === id);
      if (known) return webhookFailingNotification(known, false, null);
      const hook = (await webhooksById(db, [id])).get(id);
      const resellerId = hook?.resellerId ?? '';
      return webhookFailingNotification(
        { id, url: hook?.url ?? id, resellerId, reseller: resellerId },
        false,
        null,
      );
    },
    now,
  );
}

/**
 * The servers on host `hostId` that its hypervisor holds paused on a failed write to their disk
 * (`service.paused:{host}:{service}`), as the reconciler's pass over the host found them
 * (`paused`, by service id): each newly paused is notified, and each no longer paused there
 * (resumed, stopped, moved, removed) notified as ended. Returns the services newly notified.
 */
export async function servicesPaused(
  db: Kysely<Database>,
  hostId: string,
  paused: ReadonlyMap<string, DiskErrorPause>,
  now: number,
): Promise<string[]> {
  const prefix = `service.paused:${hostId}:`;
  // Read only when something is told (most passes find nothing paused and nothing in force).
  let known: { id: string; name: string } | undefined;
  const host = async () =>
    (known ??= (await db
      .selectFrom('hypervisor_hosts')
      .select(['id', 'name'])
      .where('id', '=', hostId)
      .executeTakeFirst()) ?? { id: hostId, name: hostId });
  const servicesOf = async (ids: readonly string[]) =>
    ids.length === 0
      ? []
      : db
          .selectFrom('services')
          .select(['id', 'reseller_id as resellerId', 'domain_name as domain'])
          .where('id', 'in', ids)
          .execute();
  const started = await reconcile(
    db,
    prefix,
    async () => {
      const observed = new Map<string, NewNotification>();
      // Only the product's servers: a VM paused whose service is gone has no one to tell of it.
      for (const s of await servicesOf([...paused.keys()]))
        observed.set(`${prefix}${s.id}`, servicePausedNotification(s, await host(), paused.get(s.id)));
      return { seen: undefined, observed };
    },
    async (key) => {
      const id = key.slice(prefix.length);
      const [s] = await servicesOf([id]);
      return servicePausedNotification(s ?? { id, resellerId: '', domain: id }, await host(), undefined);
    },
    now,
  );
  return started.map((key) => key.slice(prefix.length));
}

/**
 * Ends the `service.paused` conditions that no pass over their host will end: the service is
 * gone, terminated, or recorded on another host since (moved, or its host removed, while that
 * host did not answer: only a host that answers is passed over).
 */
async function pausedElsewhere(db: Kysely<Database>, now: number): Promise<void> {
  const prefix = 'service.paused:';
  const inForce = [...(await conditionsInForce(db, prefix))].filter(([k]) => k.startsWith(prefix));
  for (const [key, since] of inForce) {
    const hostId = key.slice(prefix.length, key.lastIndexOf(':'));
    const serviceId = key.slice(key.lastIndexOf(':') + 1);
    const s = await db
      .selectFrom('services')
      .select(['id', 'reseller_id as resellerId', 'domain_name as domain', 'host_id', 'status'])
      .where('id', '=', serviceId)
      .executeTakeFirst();
    if (s && s.status !== 'terminated' && s.host_id === hostId) continue;
    const host = (await db
      .selectFrom('hypervisor_hosts')
      .select(['id', 'name'])
      .where('id', '=', hostId)
      .executeTakeFirst()) ?? { id: hostId, name: hostId };
    await endCondition(
      db,
      key,
      since,
      servicePausedNotification(s ?? { id: serviceId, resellerId: '', domain: serviceId }, host, undefined),
      now,
    );
  }
}

/**
 * One look at the lasting conditions operators are notified of: hosts full, resellers near a
 * quota, resellers' webhooks failing for a day (and the servers paused that no pass over their
 * host will find again). Each is notified when it starts and when it ends.
 */
export async function sweepConditions(db: Kysely<Database>, now: number): Promise<void> {
  await hostsFull(db, now);
  await quotasNear(db, now);
  await webhooksFailing(db, now);
  await pausedElsewhere(db, now);
}
