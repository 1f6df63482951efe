import type { Kysely } from 'kysely';
import {
  type HostResource,
  hostFullNotification,
  hostFullResources,
  type NewNotification,
  quotaNearNotification,
  quotaNearResources,
  WEBHOOK_FAILING_MS,
  webhookFailingNotification,
} from '../domain/notifications.ts';
import { QUOTA_RESOURCES, type QuotaResource } from '../domain/quotas.ts';
import { hostLoads, resellersWithQuota, webhookFailures } from '../store/repos/notification-watch.ts';
import { conditionsInForce, endCondition, startCondition } from '../store/repos/notifications.ts';
import { findQuota, quotaUse } from '../store/repos/quotas.ts';
import { webhooksById } from '../store/repos/webhooks.ts';
import type { Database } from '../store/schema.ts';

/**
 * Brings the conditions in force under `prefix` to `observed`: each one observed and not in
 * force starts (and is notified), each in force and no longer observed ends (and is notified).
 * Starting and ending are conditional writes, so a condition is notified once however many
 * processes look.
 */
async function reconcile(
  db: Kysely<Database>,
  prefix: string,
  observed: ReadonlyMap<string, NewNotification>,
  ended: (key: string) => Promise<NewNotification>,
  now: number,
): Promise<void> {
  const inForce = await conditionsInForce(db, prefix);
  for (const [key, n] of observed) if (!inForce.has(key)) await startCondition(db, key, n, now);
  for (const key of inForce) if (!observed.has(key)) await endCondition(db, key, await ended(key), now);
}

const isHostResource = (r: string | undefined): r is HostResource =>
  r === 'cpu' || r === 'ram' || r === 'disk';
const isQuotaResource = (r: string | undefined): r is QuotaResource => QUOTA_RESOURCES.some((q) => q === r);

/** Hosts more than 90 % allocated on a resource: `host.full:{host}:{resource}`. */
async function hostsFull(db: Kysely<Database>, now: number): Promise<void> {
  const hosts = await hostLoads(db);
  const observed = new Map<string, NewNotification>();
  for (const h of hosts) {
    for (const r of hostFullResources(h.load))
      observed.set(`host.full:${h.id}:${r}`, hostFullNotification(h, r, h.load[r], true));
  }
  await reconcile(
    db,
    'host.full:',
    observed,
    async (key) => {
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
  const resellers = await resellersWithQuota(db);
  const observed = new Map<string, NewNotification>();
  const seen = new Map<
    string,
    { quota: Awaited<ReturnType<typeof findQuota>>; use: Awaited<ReturnType<typeof quotaUse>> }
  >();
  for (const r of resellers) {
    const quota = await findQuota(db, r.id);
    if (!quota) continue;
    const use = await quotaUse(db, r.id);
    seen.set(r.id, { quota, use });
    for (const res of quotaNearResources(quota, use, QUOTA_RESOURCES))
      observed.set(`quota.near:${r.id}:${res}`, quotaNearNotification(r, res, quota[res], use[res], true));
  }
  await reconcile(
    db,
    'quota.near:',
    observed,
    async (key) => {
      const [, id = '', resource] = key.split(':');
      const r = isQuotaResource(resource) ? resource : 'services';
      const known = seen.get(id);
      const name = resellers.find((x) => x.id === id)?.name ?? id;
      const use = known?.use ?? (await quotaUse(db, id));
      return quotaNearNotification({ id, name }, r, known?.quota?.[r] ?? null, use[r], false);
    },
    now,
  );
}

/** Resellers' webhooks whose receiver has taken no delivery for a day: `webhook.failing:{webhook}`. */
async function webhooksFailing(db: Kysely<Database>, now: number): Promise<void> {
  const failures = await webhookFailures(db, now, WEBHOOK_FAILING_MS);
  const observed = new Map<string, NewNotification>();
  for (const f of failures) {
    if (f.failingSince !== null && f.failingSince <= now - WEBHOOK_FAILING_MS && !f.deliveredRecently)
      observed.set(`webhook.failing:${f.id}`, webhookFailingNotification(f, true, f.lastError));
  }
  await reconcile(
    db,
    'webhook.failing:',
    observed,
    async (key) => {
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
 * One look at the lasting conditions operators are notified of: hosts full, resellers near a
 * quota, resellers' webhooks failing for a day. Each is notified when it starts and when it ends.
 */
export async function sweepConditions(db: Kysely<Database>, now: number): Promise<void> {
  await hostsFull(db, now);
  await quotasNear(db, now);
  await webhooksFailing(db, now);
}
