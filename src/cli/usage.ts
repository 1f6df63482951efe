import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { createClock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import { usageReportCsv } from '../domain/usage-csv.ts';
import { parsePeriod, type UsageReport } from '../domain/usage-report.ts';
import { findResellerByName } from '../store/repos/resellers.ts';
import type { Database } from '../store/schema.ts';
import { usageReport } from '../store/usage-report.ts';
import { CommandError, type Output, parseArguments, UsageError } from './output.ts';

/** `vrp usage --from ISO --to ISO [--reseller NAME] [--csv]` (docs/usage.md). */
export async function usageCommand(
  db: Kysely<Database>,
  args: string[],
  out: Output,
  config: Pick<Config, 'clockStart' | 'clockRate'>,
): Promise<void> {
  const { values, positionals } = parseArguments(() => parse(args));
  if (positionals.length > 0) throw new UsageError(`usage: unexpected arguments: ${positionals.join(' ')}`);
  if (values.from === undefined || values.to === undefined) {
    throw new UsageError('usage: --from ISO and --to ISO are required');
  }
  if (values.csv && out.json) throw new UsageError('usage: --csv and --json: choose one');
  let period: { from: number; to: number };
  try {
    period = parsePeriod(values.from, values.to);
  } catch (err) {
    if (err instanceof ApiError) throw new UsageError(`usage: --${err.message}`);
    throw err;
  }
  let resellerId: string | undefined;
  if (values.reseller !== undefined) {
    const r = await findResellerByName(db, values.reseller);
    if (!r) throw new CommandError(`no reseller named "${values.reseller}"`);
    resellerId = r.id;
  }
  // The server's clock (VRP_CLOCK_START / VRP_CLOCK_RATE), as the server would count open intervals.
  const now = createClock(config.clockStart, config.clockRate).now();
  const report = await usageReport(db, { ...period, resellerId }, now);
  if (values.csv) {
    process.stdout.write(usageReportCsv(report));
    return;
  }
  out.result(report, human);
}

function parse(args: string[]) {
  return parseArgs({
    args,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      reseller: { type: 'string' },
      csv: { type: 'boolean' },
    },
    allowPositionals: true,
  });
}

const hours = (n: number) => n.toFixed(2);

/** A table for people: hours to two decimals (the JSON and CSV carry six). */
function human(report: UsageReport): string {
  const head = `usage from ${report.from} to ${report.to} (open intervals counted until ${report.until})`;
  if (report.lines.length === 0) return `${head}\n(no usage)`;
  const rows = [
    [
      'reseller',
      'product',
      'services',
      'service-h',
      'cpu-h',
      'ram-GB-h',
      'hdd-GB-h',
      'ip-h',
      'backup-GB-h',
      'suspended service-h',
      'traffic-in-GB',
      'traffic-out-GB',
    ],
    ...report.lines.map((l) => [
      l.reseller_name,
      l.product_name || l.product_id,
      String(l.services),
      hours(l.service_hours),
      hours(l.cpu_hours),
      hours(l.ram_gb_hours),
      hours(l.hdd_gb_hours),
      hours(l.ip_hours),
      hours(l.backup_gb_hours),
      hours(l.suspended_service_hours),
      hours(l.traffic_in_gb),
      hours(l.traffic_out_gb),
    ]),
  ];
  return [head, ...rows.map((r) => r.join('\t'))].join('\n');
}
