import { type Kysely, sql } from 'kysely';
import type { Amounts } from '../../domain/orders.ts';
import {
  checkQuota,
  countedSize,
  isUnlimited,
  MAX_QUOTA,
  orderDemand,
  QUOTA_RESOURCES,
  type Quota,
  type QuotaUse,
  upgradeDemand,
} from '../../domain/quotas.ts';
import type { DialectFeatures } from '../database.ts';
import type { HotReads } from '../hot-reads.ts';
import type { Database, ResellerQuotaTable } from '../schema.ts';
import { type AuditContext, recordAudit } from './audit.ts';
import type { Service } from './services.ts';

const toQuota = (r: ResellerQuotaTable): Quota => ({
  services: r.services,
  cpu: r.cpu,
  ram: r.ram,
  hdd: r.hdd,
  ip: r.ip,
  backup: r.backup,
});

/** The reseller's quota, or undefined if it has none: the prepared read every order makes first. */
export async function findQuotaFast(reads: HotReads, resellerId: string): Promise<Quota | undefined> {
  const row = await reads.resellerQuota(resellerId);
  return row && toQuota(row);
}

/** The reseller's quota, or undefined if it has none (everything unlimited). */
export async function findQuota(db: Kysely<Database>, resellerId: string): Promise<Quota | undefined> {
  const row = await db
    .selectFrom('reseller_quotas')
    .selectAll()
    .where('reseller_id', '=', resellerId)
    .executeTakeFirst();
  return row && toQuota(row);
}

/**
 * Sets the reseller's quota to exactly `quota` (null caps: unlimited); a quota that caps nothing
 * is removed, so that the reseller's orders skip the check. Services above a lowered cap stay;
 * only new orders and upgrades are refused. The one writer of quotas: the CLI (actor `cli`) and
 * the operator API (the operator) call it, and it records the change in the audit log in the
 * same transaction.
 */
export async function setQuota(
  db: Kysely<Database>,
  resellerId: string,
  quota: Quota,
  now: number,
  audit: AuditContext,
): Promise<void> {
  // Callers validate their input (the CLI, the operator API's schema); this guards the column.
  for (const r of QUOTA_RESOURCES) {
    const cap = quota[r];
    if (cap !== null && !(Number.isInteger(cap) && cap >= 0 && cap <= MAX_QUOTA)) {
      throw new RangeError(`a ${r} cap is a whole number from 0 to ${MAX_QUOTA} or null, got ${cap}`);
    }
  }
  await db.transaction().execute(async (tx) => {
    if (isUnlimited(quota)) {
      await tx.deleteFrom('reseller_quotas').where('reseller_id', '=', resellerId).execute();
    } else {
      const row: ResellerQuotaTable = { reseller_id: resellerId, ...quota, updated_at: now };
      await tx
        .insertInto('reseller_quotas')
        .values(row)
        .onConflict((oc) => oc.column('reseller_id').doUpdateSet({ ...quota, updated_at: now }))
        .execute();
    }
    await recordAudit(tx, audit, { target: { type: 'reseller', id: resellerId }, resellerId }, now);
  });
}

interface Use {
  readonly total: QuotaUse;
  /** What the service asked about counts for now: its size, or a larger upgrade waiting. */
  readonly counted: Amounts | undefined;
}

type UseRow = {
  kind: 'total' | 'waiting' | 'self';
  service_id: string | null;
  params: string | null;
  services: number;
  cpu: number | null;
  ram: number | null;
  hdd: number | null;
  ip: number | null;
  backup: number | null;
};

/** The amounts of a row (null: a sum over no services). */
const amountsOf = (r: UseRow): Amounts => ({
  cpu: Number(r.cpu ?? 0),
  ram: Number(r.ram ?? 0),
  hdd: Number(r.hdd ?? 0),
  ip: Number(r.ip ?? 0),
  backup: Number(r.backup ?? 0),
});

/**
 * The reseller's use: totals over its services that are not terminated, an upgrade still waiting
 * counted at its new size where that is larger (it was accepted against the quota at that size);
 * with `serviceId`, also what that service counts for. One statement, so one snapshot: a job
 * finishing meanwhile (it does not take the reseller's lock) is seen entirely or not at all.
 */
async function readUse(db: Kysely<Database>, resellerId: string, serviceId?: string): Promise<Use> {
  // The waiting upgrades are written as the partial index jobs_waiting_upgrades says it
  // (migration 007), literals and all, so that SQLite's planner sees the query is within it.
  const self = serviceId
    ? sql`union all select 'self', id, null, 0, cpu, ram, hdd, ip_count, backup
        from services where id = ${serviceId}`
    : sql``;
  const { rows } = await sql<UseRow>`
    select 'total' as kind, null as service_id, null as params, count(*) as services, sum(cpu) as cpu,
        sum(ram) as ram, sum(hdd) as hdd, sum(ip_count) as ip, sum(backup) as backup
      from services where reseller_id = ${resellerId} and terminated_at is null
    union all select 'waiting', j.service_id, j.params, 0, s.cpu, s.ram, s.hdd, s.ip_count, s.backup
      from jobs j join services s on s.id = j.service_id
      where j.reseller_id = ${resellerId} and j.action = 'upgrade' and j.status in ('queued', 'running')
        and s.terminated_at is null
    ${self}`.execute(db);
  const sums = rows.find((r) => r.kind === 'total');
  // An aggregate without group by is always one row.
  if (!sums) throw new Error('the use query answered no total');
  const total = { services: Number(sums.services), ...amountsOf(sums) };
  const byService = new Map<string, { current: Amounts; waiting: Amounts[] }>();
  for (const r of rows) {
    if (r.kind !== 'waiting' || r.service_id === null || r.params === null) continue;
    let entry = byService.get(r.service_id);
    if (!entry) {
      entry = { current: amountsOf(r), waiting: [] };
      byService.set(r.service_id, entry);
    }
    // Checked when the job was accepted (domain/job-params.ts).
    entry.waiting.push(JSON.parse(r.params) as Amounts);
  }
  for (const { current, waiting } of byService.values()) {
    const size = countedSize(current, waiting);
    total.cpu += size.cpu - current.cpu;
    total.ram += size.ram - current.ram;
    total.hdd += size.hdd - current.hdd;
    total.ip += size.ip - current.ip;
    total.backup += size.backup - current.backup;
  }
  const own = rows.find((r) => r.kind === 'self');
  const ownWaiting = own?.service_id ? byService.get(own.service_id)?.waiting : undefined;
  const counted = own && countedSize(amountsOf(own), ownWaiting ?? []);
  return { total, counted };
}

/** The reseller's current use of each resource (what GET API/usage shows beside the quota). */
export async function quotaUse(db: Kysely<Database>, resellerId: string): Promise<QuotaUse> {
  return (await readUse(db, resellerId)).total;
}

/**
 * The quota, read under the lock that makes quota checks of one reseller take turns: the
 * reseller's row (PostgreSQL, FOR UPDATE until the transaction ends); on SQLite the write
 * transaction is the lock already. Call it first in the transaction that writes the request.
 */
async function lockedQuota(
  tx: Kysely<Database>,
  features: DialectFeatures,
  resellerId: string,
): Promise<Quota | undefined> {
  if (features.rowLocks) {
    await tx.selectFrom('resellers').select('id').where('id', '=', resellerId).forUpdate().execute();
  }
  return findQuota(tx, resellerId);
}

/**
 * Inside the transaction that records a new service: refuses it with 400 `quota_exceeded` if it
 * would take the reseller over its quota. Concurrent orders take turns on the lock, so each sees
 * the services the ones before it wrote.
 */
export async function checkOrderQuota(
  tx: Kysely<Database>,
  features: DialectFeatures,
  resellerId: string,
  amounts: Amounts,
): Promise<void> {
  const quota = await lockedQuota(tx, features, resellerId);
  if (!quota) return;
  const use = await readUse(tx, resellerId);
  checkQuota(quota, use.total, orderDemand(amounts), 'order');
}

/**
 * Inside the transaction that accepts an upgrade of `service` to `amounts`: refuses it with 400
 * `quota_exceeded` if the growth would take the reseller over its quota. A reseller without a
 * quota is not locked.
 */
export async function checkUpgradeQuota(
  tx: Kysely<Database>,
  features: DialectFeatures,
  service: Service,
  amounts: Amounts,
): Promise<void> {
  if (!(await findQuota(tx, service.resellerId))) return;
  const quota = await lockedQuota(tx, features, service.resellerId);
  if (!quota) return;
  // The service's size is read again with the totals: a job may have changed it since the request read it.
  const use = await readUse(tx, service.resellerId, service.id);
  if (!use.counted) return; // gone meanwhile: the request fails on its own
  checkQuota(quota, use.total, upgradeDemand(use.counted, amounts), 'upgrade');
}
