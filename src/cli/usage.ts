import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { createClock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import { serviceUsageCsv, usageReportCsv } from '../domain/usage-csv.ts';
import { resolvePeriod, USAGE_PRESETS, type UsagePreset, type UsageReport } from '../domain/usage-report.ts';
import { findResellerByName } from '../store/repos/resellers.ts';
import type { Database } from '../store/schema.ts';
import { usageByService, usageReport } from '../store/usage-report.ts';
import { CommandError, type Output, parseArguments, UsageError } from './output.ts';

/**
 * `vrp usage (--from ISO --to ISO | --period this_month|last_month) [--reseller NAME]
 * [--csv [--per-service]]` (docs/usage.md).
 */
export async function usageCommand(
  db: Kysely<Database>,
  args: string[],
  out: Output,
  config: Pick<Config, 'clockStart' | 'clockRate'>,
): Promise<void> {
  const { values, positionals } = parseArguments(() => parse(args));
  if (positionals.length > 0) throw new UsageError(`usage: unexpected arguments: ${positionals.join(' ')}`);
  if (values.period === undefined && (values.from === undefined || values.to === undefined)) {
    throw new UsageError('usage: --from ISO and --to ISO are required (or --period this_month|last_month)');
  }
  if (values.csv && out.json) throw new UsageError('usage: --csv and --json: choose one');
  if (values['per-service'] && !values.csv) throw new UsageError('usage: --per-service is a CSV: add --csv');
  const preset = values.period;
  if (preset !== undefined && !isPreset(preset)) {
    throw new UsageError(`usage: --period must be ${USAGE_PRESETS.join(' or ')}`);
  }
  // The server's clock (VRP_CLOCK_START / VRP_CLOCK_RATE), as the server would count open intervals.
  const now = createClock(config.clockStart, config.clockRate).now();
  let period: { from: number; to: number };
  try {
    period = resolvePeriod({ from: values.from, to: values.to, period: preset }, now);
  } catch (err) {
    if (err instanceof ApiError)
      throw new UsageError(`usage: ${err.message.replace(/^(from|to)\b/, '--$1')}`);
    throw err;
  }
  let resellerId: string | undefined;
  if (values.reseller !== undefined) {
    const r = await findResellerByName(db, values.reseller);
    if (!r) throw new CommandError(`no reseller named "${values.reseller}"`);
    resellerId = r.id;
  }
  if (values['per-service']) {
    process.stdout.write(serviceUsageCsv(await usageByService(db, { ...period, resellerId }, now)));
    return;
  }
  const report = await usageReport(db, { ...period, resellerId }, now);
  if (values.csv) {
    process.stdout.write(usageReportCsv(report));
    return;
  }
  out.result(report, human);
}

function isPreset(value: string): value is UsagePreset {
  return USAGE_PRESETS.some((p) => p === value);
}

function parse(args: string[]) {
  return parseArgs({
    args,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      reseller: { type: 'string' },
      period: { type: 'string' },
      csv: { type: 'boolean' },
      'per-service': { type: 'boolean' },
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
    ...[...report.lines, { ...report.totals, reseller_name: 'total', product_name: '', product_id: '' }].map(
      (l) => [
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
      ],
    ),
  ];
  return [head, ...rows.map((r) => r.join('\t'))].join('\n');
}
