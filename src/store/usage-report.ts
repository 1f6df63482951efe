import type { Kysely } from 'kysely';
import { type UsageReport, usageLine } from '../domain/usage-report.ts';
import { sumUsage } from './repos/usage-intervals.ts';
import type { Database } from './schema.ts';

/** What a usage report covers: [from, to) in epoch milliseconds, one reseller or all. */
export interface UsageQuery {
  readonly from: number;
  readonly to: number;
  readonly resellerId?: string;
}

/**
 * The usage report (docs/usage.md): per reseller and product, service-hours and cpu-, ram-GB-,
 * hdd-GB-, ip- and backup-GB-hours in [from, to), suspended time apart. Intervals still open
 * count up to `now` (the server's clock), so a report of the current month grows as it goes.
 * The one report the CLI and the operator API give.
 */
export async function usageReport(
  db: Kysely<Database>,
  query: UsageQuery,
  now: number,
): Promise<UsageReport> {
  const until = Math.max(query.from, Math.min(query.to, now));
  const rows = await sumUsage(db, { from: query.from, until, resellerId: query.resellerId });
  return {
    from: new Date(query.from).toISOString(),
    to: new Date(query.to).toISOString(),
    until: new Date(until).toISOString(),
    lines: rows.map((r) => usageLine(r, r.totals)),
  };
}
