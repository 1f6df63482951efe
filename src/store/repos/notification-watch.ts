/**
 * What the notifications' sweep looks at (jobs/notify-conditions.ts): the allocation of each
 * host, the resellers that have a quota, and the resellers' webhooks whose deliveries fail.
 */
import { type Kysely, sql } from 'kysely';
import type { HostLoad } from '../../domain/notifications.ts';
import type { Database } from '../schema.ts';

/** Every host's capacity and allocation, as placement counts them. */
export async function hostLoads(
  db: Kysely<Database>,
): Promise<{ readonly id: string; readonly name: string; readonly load: HostLoad }[]> {
  const rows = await db
    .selectFrom('hypervisor_hosts')
    .select(['id', 'name', 'cpu', 'ram_gb', 'disk_gb', 'used_cpu', 'used_ram_gb', 'used_disk_gb'])
    .orderBy('name')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    load: {
      cpu: { capacity: Number(r.cpu), used: Number(r.used_cpu) },
      ram: { capacity: Number(r.ram_gb), used: Number(r.used_ram_gb) },
      disk: { capacity: Number(r.disk_gb), used: Number(r.used_disk_gb) },
    },
  }));
}

/** The resellers with a quota (the others have nothing to be near). */
export async function resellersWithQuota(
  db: Kysely<Database>,
): Promise<{ readonly id: string; readonly name: string }[]> {
  return db
    .selectFrom('reseller_quotas as q')
    .innerJoin('resellers as r', 'r.id', 'q.reseller_id')
    .select(['r.id', 'r.name'])
    .orderBy('r.name')
    .execute();
}

/** A reseller's webhook with deliveries that fail: since when, and what the last said. */
export interface WebhookFailure {
  readonly id: string;
  readonly url: string;
  readonly resellerId: string;
  readonly reseller: string;
  /** When the oldest delivery that is failing (retrying, or given up within `dayMs`) was queued. */
  readonly failingSince: number | null;
  /** Whether a delivery succeeded within the last `dayMs`. */
  readonly deliveredRecently: boolean;
  readonly lastError: string | null;
}

/**
 * The resellers' webhooks with deliveries retrying or ended within `dayMs`: for each, since when
 * its failing deliveries wait and whether any delivery succeeded meanwhile. Reads only the
 * deliveries pending or finished within the day.
 */
export async function webhookFailures(
  db: Kysely<Database>,
  now: number,
  dayMs: number,
): Promise<WebhookFailure[]> {
  const since = now - dayMs;
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .innerJoin('resellers as r', 'r.id', 'w.reseller_id')
    .select([
      'd.webhook_id',
      'w.url',
      'w.reseller_id',
      'r.name',
      sql<
        number | string | null
      >`min(case when d.status <> 'succeeded' and d.last_error is not null then d.created_at end)`.as(
        'failing_since',
      ),
      sql<number | string | null>`max(case when d.status = 'succeeded' then d.finished_at end)`.as('last_ok'),
      sql<string | null>`max(d.last_error)`.as('last_error'),
    ])
    .where((eb) => eb.or([eb('d.status', '=', 'pending'), eb('d.finished_at', '>=', since)]))
    .groupBy(['d.webhook_id', 'w.url', 'w.reseller_id', 'r.name'])
    .execute();
  return rows.map((r) => ({
    id: r.webhook_id,
    url: r.url,
    resellerId: r.reseller_id,
    reseller: r.name,
    failingSince: r.failing_since === null ? null : Number(r.failing_since),
    deliveredRecently: r.last_ok !== null,
    lastError: r.last_error,
  }));
}
