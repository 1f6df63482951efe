/**
 * The usage report for invoicing (docs/design/contract.md#quotas-and-usage): per reseller and
 * product, how many service-hours and resource-hours its services used in a period, time suspended
 * apart. The store sums milliseconds x resource over the recorded intervals
 * (store/repos/usage-intervals.ts); this turns the sums into the report's lines.
 */
import { ApiError } from './errors.ts';
import { gbOf } from './traffic.ts';

/** What is measured: the service itself, then each resource (cpu in vCores, ram, hdd, backup in GB, ip in addresses). */
export const USAGE_MEASURES = ['service', 'cpu', 'ram', 'hdd', 'ip', 'backup'] as const;
export type UsageMeasure = (typeof USAGE_MEASURES)[number];

/** Milliseconds x units, per measure: exact integers. */
export type MeasureTotals = Readonly<Record<UsageMeasure, bigint>>;

/** One reseller's use of one product in a period: running (not suspended) and suspended apart. */
export interface UsageTotals {
  readonly running: MeasureTotals;
  readonly suspended: MeasureTotals;
  /** Services with any time in the period. */
  readonly services: number;
}

/** The name of each measure's hours in a line (suspended ones get `suspended_` before it). */
const HOURS_FIELD = {
  service: 'service_hours',
  cpu: 'cpu_hours',
  ram: 'ram_gb_hours',
  hdd: 'hdd_gb_hours',
  ip: 'ip_hours',
  backup: 'backup_gb_hours',
} as const satisfies Record<UsageMeasure, string>;

type HoursField = (typeof HOURS_FIELD)[UsageMeasure];
type SuspendedHoursField = `suspended_${HoursField}`;

/** A line of the report: one reseller, one product. Hours are of time not suspended; `suspended_*` of time suspended. */
export type UsageLine = {
  readonly reseller_id: string;
  readonly reseller_name: string;
  readonly product_id: string;
  readonly product_name: string;
  readonly services: number;
  /** GB (10^9 bytes, six decimals) into and out of the servers on the UTC days that begin in the period. */
  readonly traffic_in_gb: number;
  readonly traffic_out_gb: number;
} & Readonly<Record<HoursField | SuspendedHoursField, number>>;

/** The line's fields, in the order the CSV writes them. */
export const USAGE_LINE_FIELDS: readonly (keyof UsageLine)[] = [
  'reseller_id',
  'reseller_name',
  'product_id',
  'product_name',
  'services',
  ...USAGE_MEASURES.map((m) => HOURS_FIELD[m]),
  ...USAGE_MEASURES.map((m) => `suspended_${HOURS_FIELD[m]}` as const),
  'traffic_in_gb',
  'traffic_out_gb',
];

export interface UsageReport {
  /** The period, [from, to), ISO 8601 UTC. */
  readonly from: string;
  readonly to: string;
  /** Intervals still open are counted up to this time (now, or `to` if it has passed). */
  readonly until: string;
  readonly lines: readonly UsageLine[];
  /** Each figure summed over the lines (usageTotals). */
  readonly totals: UsageFigures;
}

const MS_PER_HOUR = 3_600_000n;

/**
 * Hours from milliseconds x units, to six decimals (3.6 ms): exact to the second. Whole hours
 * are divided out as integers, so even totals beyond 2^53 ms keep their fraction.
 */
export function hoursOf(msUnits: bigint): number {
  const whole = msUnits / MS_PER_HOUR;
  const micro = ((msUnits % MS_PER_HOUR) * 1_000_000n + MS_PER_HOUR / 2n) / MS_PER_HOUR;
  return Number(whole) + Number(micro) / 1_000_000;
}

/** Nothing measured: the hours of a line that has traffic only. */
export const NO_USAGE: UsageTotals = {
  running: { service: 0n, cpu: 0n, ram: 0n, hdd: 0n, ip: 0n, backup: 0n },
  suspended: { service: 0n, cpu: 0n, ram: 0n, hdd: 0n, ip: 0n, backup: 0n },
  services: 0,
};

/** The report's line for one reseller's use of one product; `traffic` in bytes. */
export function usageLine(
  who: { resellerId: string; resellerName: string; productId: string; productName: string },
  totals: UsageTotals,
  traffic: { readonly inBytes: number; readonly outBytes: number } = { inBytes: 0, outBytes: 0 },
): UsageLine {
  const hours: Record<string, number> = {};
  for (const m of USAGE_MEASURES) {
    hours[HOURS_FIELD[m]] = hoursOf(totals.running[m]);
    hours[`suspended_${HOURS_FIELD[m]}`] = hoursOf(totals.suspended[m]);
  }
  return {
    reseller_id: who.resellerId,
    reseller_name: who.resellerName,
    product_id: who.productId,
    product_name: who.productName,
    services: totals.services,
    ...(hours as Record<HoursField | SuspendedHoursField, number>),
    traffic_in_gb: gbOf(traffic.inBytes),
    traffic_out_gb: gbOf(traffic.outBytes),
  };
}

/** ISO 8601: a date (midnight UTC), or a date and time with `Z` or an offset; nothing local. */
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(?:Z|[+-](\d{2}):(\d{2})))?$/;

/** Epoch milliseconds of an ISO 8601 time, or undefined if it is not one (2026-02-30 is not). */
export function parseIsoTime(text: string): number | undefined {
  const m = ISO.exec(text);
  if (!m) return undefined;
  const [y = 0, mo = 0, d = 0, h = 0, min = 0, sec = 0, oh = 0, om = 0] = m
    .slice(1)
    .map((v) => Number(v ?? 0));
  // Date.parse rolls 2026-02-30 over to March and takes 24:00: the calendar is checked here.
  const day = new Date(Date.UTC(y, mo - 1, d));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return undefined;
  if (h > 23 || min > 59 || sec > 59 || oh > 23 || om > 59) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

/** A report's period from its two texts: both ISO 8601 times, `from` before `to`; else 400 `validation_failed`. */
export function parsePeriod(fromText: string, toText: string): { from: number; to: number } {
  const from = parseIsoTime(fromText);
  const to = parseIsoTime(toText);
  const format = 'an ISO 8601 date (2026-01-01) or time with a zone (2026-01-01T00:00:00Z)';
  if (from === undefined) throw new ApiError('validation_failed', `from must be ${format}`);
  if (to === undefined) throw new ApiError('validation_failed', `to must be ${format}`);
  if (to <= from) throw new ApiError('validation_failed', 'to must be after from');
  return { from, to };
}

/** Named periods: calendar months in UTC. */
export const USAGE_PRESETS = ['this_month', 'last_month'] as const;
export type UsagePreset = (typeof USAGE_PRESETS)[number];

/**
 * The period a preset names at `now`: `this_month` from the first of the current UTC month to the
 * first of the next (intervals still open count until now), `last_month` the whole month before.
 */
export function presetPeriod(preset: UsagePreset, now: number): { from: number; to: number } {
  const d = new Date(now);
  const month = d.getUTCMonth() - (preset === 'last_month' ? 1 : 0);
  // Date.UTC carries month -1 into December of the year before, and 12 into January after.
  return { from: Date.UTC(d.getUTCFullYear(), month, 1), to: Date.UTC(d.getUTCFullYear(), month + 1, 1) };
}

/**
 * A report's period as a request gives it: `from` and `to` (parsePeriod), or a preset, never both
 * and never one of the two alone; else 400 `validation_failed`.
 */
export function resolvePeriod(
  given: {
    readonly from?: string | undefined;
    readonly to?: string | undefined;
    readonly period?: UsagePreset | undefined;
  },
  now: number,
): { from: number; to: number } {
  if (given.period !== undefined) {
    if (given.from !== undefined || given.to !== undefined) {
      throw new ApiError('validation_failed', 'give either period or from and to, not both');
    }
    return presetPeriod(given.period, now);
  }
  if (given.from === undefined || given.to === undefined) {
    throw new ApiError(
      'validation_failed',
      `from and to are required (or period: ${USAGE_PRESETS.join(' or ')})`,
    );
  }
  return parsePeriod(given.from, given.to);
}

/** The figures of a line (what a totals row sums): every field but the names. */
export const USAGE_FIGURE_FIELDS = [
  'services',
  ...USAGE_MEASURES.map((m) => HOURS_FIELD[m]),
  ...USAGE_MEASURES.map((m) => `suspended_${HOURS_FIELD[m]}` as const),
  'traffic_in_gb',
  'traffic_out_gb',
] as const satisfies readonly (keyof UsageLine)[];
export type UsageFigureField = (typeof USAGE_FIGURE_FIELDS)[number];
export type UsageFigures = Readonly<Record<UsageFigureField, number>>;

/** A figure of six decimals at most, in millionths, exactly (the whole part apart, so beyond 2^53 / 10^6 too). */
export function microOf(value: number): bigint {
  const whole = Math.trunc(value);
  return BigInt(whole) * 1_000_000n + BigInt(Math.round((value - whole) * 1_000_000));
}

/** Millionths as a figure, the way hoursOf writes one. */
export function figureOf(micro: bigint): number {
  return Number(micro / 1_000_000n) + Number(micro % 1_000_000n) / 1_000_000;
}

/**
 * The totals row: each figure summed over `lines`, exactly as they are shown (in millionths, so
 * no binary rounding creeps in): what a reader adding up the column gets.
 */
export function usageTotals(lines: readonly UsageLine[]): UsageFigures {
  return figures((f) => figureOf(lines.reduce((sum, l) => sum + microOf(l[f]), 0n)));
}

/** Each figure from `get`: spelt out, so that the type checker sees every field. */
function figures(get: (field: UsageFigureField) => number): UsageFigures {
  return {
    services: get('services'),
    service_hours: get('service_hours'),
    cpu_hours: get('cpu_hours'),
    ram_gb_hours: get('ram_gb_hours'),
    hdd_gb_hours: get('hdd_gb_hours'),
    ip_hours: get('ip_hours'),
    backup_gb_hours: get('backup_gb_hours'),
    suspended_service_hours: get('suspended_service_hours'),
    suspended_cpu_hours: get('suspended_cpu_hours'),
    suspended_ram_gb_hours: get('suspended_ram_gb_hours'),
    suspended_hdd_gb_hours: get('suspended_hdd_gb_hours'),
    suspended_ip_hours: get('suspended_ip_hours'),
    suspended_backup_gb_hours: get('suspended_backup_gb_hours'),
    traffic_in_gb: get('traffic_in_gb'),
    traffic_out_gb: get('traffic_out_gb'),
  };
}
