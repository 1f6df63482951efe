/**
 * The usage report as CSV (RFC 4180): a header line, then one line per reseller and product; and
 * the per-service report, one line per service, product and resource.
 */
import { SERVICE_USAGE_FIELDS, type ServiceUsageLine } from './usage-by-service.ts';
import { USAGE_LINE_FIELDS, type UsageReport } from './usage-report.ts';

/**
 * A field as CSV: quoted when it holds a comma, quote or line break. A text that a spreadsheet
 * would run as a formula (=, +, -, @ first) gets a leading apostrophe: names come from resellers'
 * and operators' input, and the file is opened by people.
 */
function field(value: string | number): string {
  if (typeof value === 'number') return String(value);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * The report's lines as CSV with CRLF line ends, each starting with the period (`from`, `to`) so
 * that a file stands on its own once imported.
 */
export function usageReportCsv(report: Pick<UsageReport, 'from' | 'to' | 'lines'>): string {
  return csvOf(report, USAGE_LINE_FIELDS, report.lines);
}

/** The per-service report as CSV, each line starting with the period too. */
export function serviceUsageCsv(report: {
  readonly from: string;
  readonly to: string;
  readonly lines: readonly ServiceUsageLine[];
}): string {
  return csvOf(report, SERVICE_USAGE_FIELDS, report.lines);
}

function csvOf<L extends Readonly<Record<K, string | number>>, K extends string>(
  period: { readonly from: string; readonly to: string },
  fields: readonly K[],
  lines: readonly L[],
): string {
  const out = [['from', 'to', ...fields].join(',')];
  for (const line of lines)
    out.push([period.from, period.to, ...fields.map((f) => field(line[f]))].join(','));
  return `${out.join('\r\n')}\r\n`;
}
