import type { Kysely } from 'kysely';
import { type ServiceUsageLine, serviceUsageLines } from '../domain/usage-by-service.ts';
import { NO_USAGE, type UsageReport, usageLine, usageTotals } from '../domain/usage-report.ts';
import { listPlans } from './repos/plans.ts';
import { sumTraffic, sumTrafficByService } from './repos/traffic.ts';
import { sumUsage, sumUsageByService } from './repos/usage-intervals.ts';
import type { Database } from './schema.ts';

/** What a usage report covers: [from, to) in epoch milliseconds, one reseller or all. */
export interface UsageQuery {
  readonly from: number;
  readonly to: number;
  readonly resellerId?: string;
}

/**
 * The usage report (docs/usage.md): per reseller and product, service-hours and cpu-, ram-GB-,
 * hdd-GB-, ip- and backup-GB-hours in [from, to), suspended time apart, and GB of traffic in and
 * out on the UTC days that begin in [from, to). Intervals still open
 * count up to `now` (the server's clock), so a report of the current month grows as it goes.
 * The one report the CLI and the operator API give.
 */
export async function usageReport(
  db: Kysely<Database>,
  query: UsageQuery,
  now: number,
): Promise<UsageReport> {
  const until = Math.max(query.from, Math.min(query.to, now));
  const [rows, traffic] = await Promise.all([
    sumUsage(db, { from: query.from, until, resellerId: query.resellerId }),
    sumTraffic(db, query),
  ]);
  const key = (resellerId: string, productId: string) => `${resellerId} ${productId}`;
  const byKey = new Map(traffic.map((t) => [key(t.resellerId, t.productId), t]));
  const lines = rows.map((r) => {
    const t = byKey.get(key(r.resellerId, r.productId));
    byKey.delete(key(r.resellerId, r.productId));
    return usageLine(r, r.totals, t);
  });
  // Traffic of a product with no time in the period (a day that began in it, its service gone
  // since): a line of its own, with no hours.
  for (const t of byKey.values()) lines.push(usageLine(t, { ...NO_USAGE, services: t.services }, t));
  return {
    from: new Date(query.from).toISOString(),
    to: new Date(query.to).toISOString(),
    until: new Date(until).toISOString(),
    lines,
    totals: usageTotals(lines),
  };
}

/** The per-service usage report: the period as usageReport gives it, and its billing lines. */
export interface ServiceUsageReport {
  readonly from: string;
  readonly to: string;
  readonly until: string;
  readonly lines: readonly ServiceUsageLine[];
}

/**
 * The usage report per service, product and resource (the per-service usage CSV): the same
 * sums as usageReport, one grouping finer, split so that for each reseller's product and figure
 * the services' quantities add up to exactly usageReport's line (domain/usage-by-service.ts).
 */
export async function usageByService(
  db: Kysely<Database>,
  query: UsageQuery,
  now: number,
): Promise<ServiceUsageReport> {
  const until = Math.max(query.from, Math.min(query.to, now));
  const [hours, traffic, plans] = await Promise.all([
    sumUsageByService(db, { from: query.from, until, resellerId: query.resellerId }),
    sumTrafficByService(db, query),
    listPlans(db),
  ]);
  return {
    from: new Date(query.from).toISOString(),
    to: new Date(query.to).toISOString(),
    until: new Date(until).toISOString(),
    lines: serviceUsageLines(hours, traffic, plans),
  };
}
