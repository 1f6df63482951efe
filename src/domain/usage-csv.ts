/** The usage report as CSV (RFC 4180): a header line, then one line per reseller and product. */
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
export function usageReportCsv(report: UsageReport): string {
  const lines = [['from', 'to', ...USAGE_LINE_FIELDS].join(',')];
  for (const line of report.lines) {
    lines.push([report.from, report.to, ...USAGE_LINE_FIELDS.map((f) => field(line[f]))].join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}
