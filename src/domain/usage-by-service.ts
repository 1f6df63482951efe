/**
 * The usage report per service (the per-service usage CSV): one line per service, product and
 * resource, for a billing system that invoices services. Its figures are the report's own,
 * split: for each reseller's product and each figure, the services' shares add up to exactly the
 * report's line (docs/usage.md).
 */
import type { Plan } from './catalog.ts';
import { byCodeUnits } from './code-unit-text.ts';
import {
  type MeasureTotals,
  USAGE_MEASURES,
  type UsageFigureField,
  type UsageMeasure,
} from './usage-report.ts';

/** A billing line: a quantity of one resource one service used in the period. */
export interface ServiceUsageLine {
  readonly reseller_id: string;
  readonly reseller_name: string;
  readonly reseller_external_billing_id: string;
  readonly service_id: string;
  readonly domain: string;
  readonly product_id: string;
  readonly product_name: string;
  /** The name of the plan of its product whose cpu, ram and disk the service has now; empty if none. */
  readonly plan_name: string;
  /** The report's figure this is a share of (`cpu_hours`, `suspended_service_hours`, `traffic_in_gb`...). */
  readonly resource: UsageFigureField;
  /** Exact decimal text, six decimals at most. */
  readonly quantity: string;
  readonly unit: string;
}

/** The line's fields, in the order the CSV writes them (after the period). */
export const SERVICE_USAGE_FIELDS: readonly (keyof ServiceUsageLine)[] = [
  'reseller_id',
  'reseller_name',
  'reseller_external_billing_id',
  'service_id',
  'domain',
  'product_id',
  'product_name',
  'plan_name',
  'resource',
  'quantity',
  'unit',
];

/** Who and what a service's figures are about. */
export interface UsageSubject {
  readonly resellerId: string;
  readonly resellerName: string;
  readonly externalBillingId: string | null;
  readonly productId: string;
  readonly productName: string;
  readonly service: {
    readonly id: string;
    readonly domain: string;
    readonly cpu: number;
    readonly ram: number;
    readonly hdd: number;
  };
}

/** A service's milliseconds x units in a product, running and suspended apart (as the store sums them). */
export interface ServiceHours extends UsageSubject {
  readonly totals: { readonly running: MeasureTotals; readonly suspended: MeasureTotals };
}

/** A service's bytes in and out, attributed to its reseller and current product. */
export interface ServiceTraffic extends UsageSubject {
  readonly inBytes: number;
  readonly outBytes: number;
}

const FIELD: Readonly<
  Record<UsageMeasure, { running: UsageFigureField; suspended: UsageFigureField; unit: string }>
> = {
  service: { running: 'service_hours', suspended: 'suspended_service_hours', unit: 'hours' },
  cpu: { running: 'cpu_hours', suspended: 'suspended_cpu_hours', unit: 'vCore-hours' },
  ram: { running: 'ram_gb_hours', suspended: 'suspended_ram_gb_hours', unit: 'GB-hours' },
  hdd: { running: 'hdd_gb_hours', suspended: 'suspended_hdd_gb_hours', unit: 'GB-hours' },
  ip: { running: 'ip_hours', suspended: 'suspended_ip_hours', unit: 'address-hours' },
  backup: { running: 'backup_gb_hours', suspended: 'suspended_backup_gb_hours', unit: 'GB-hours' },
};

/** Millionths of an hour per millisecond x unit: 1 / 3.6, as a ratio of integers. */
const HOURS = { num: 5n, den: 18n } as const;
/** Millionths of a GB per byte: 1 / 1000. */
const GB = { num: 1n, den: 1000n } as const;

/**
 * Shares of a sum, in millionths of the unit: each part rounded down, then the millionths the
 * rounding of the sum calls for handed out one each to the parts with the largest remainders
 * (the first in the order given on a tie). So the shares add up to exactly the sum rounded half
 * up, which is how the report rounds a line (hoursOf, gbOf), and none differs from its own
 * exact value by a millionth or more.
 */
export function apportion(
  parts: readonly bigint[],
  ratio: { readonly num: bigint; readonly den: bigint },
): bigint[] {
  const { num, den } = ratio;
  const total = parts.reduce((a, b) => a + b, 0n);
  const target = (total * num * 2n + den) / (2n * den);
  const shares = parts.map((p) => (p * num) / den);
  let left = target - shares.reduce((a, b) => a + b, 0n);
  const order = parts
    .map((p, i) => ({ i, rest: (p * num) % den }))
    .filter((x) => x.rest > 0n)
    .sort((a, b) => (a.rest === b.rest ? a.i - b.i : a.rest > b.rest ? -1 : 1));
  for (const { i } of order) {
    if (left <= 0n) break;
    shares[i] = (shares[i] ?? 0n) + 1n;
    left -= 1n;
  }
  return shares;
}

/** Millionths as exact decimal text: `12.5`, `0.000278`, `3`. */
export function decimalText(micro: bigint): string {
  const whole = micro / 1_000_000n;
  const fraction = (micro % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return fraction === '' ? String(whole) : `${whole}.${fraction}`;
}

/** The plan a service's resources match now: the first of its product's plans (in catalogue order) with its cpu, ram and disk. */
function planOf(plans: readonly Plan[], s: UsageSubject): string {
  const { cpu, ram, hdd } = s.service;
  return (
    plans.find((p) => p.productId === s.productId && p.cpu === cpu && p.ram === ram && p.hdd === hdd)?.name ??
    ''
  );
}

interface Share {
  readonly subject: UsageSubject;
  readonly resource: UsageFigureField;
  readonly unit: string;
  readonly exact: bigint;
  readonly ratio: { readonly num: bigint; readonly den: bigint };
}

/**
 * The billing lines of a period: for each service, product and figure of the report, the
 * service's share (lines of a zero quantity left out), ordered by reseller name, domain, service
 * and product, then in the report's order of figures.
 */
export function serviceUsageLines(
  hours: readonly ServiceHours[],
  traffic: readonly ServiceTraffic[],
  plans: readonly Plan[],
): ServiceUsageLine[] {
  const shares: Share[] = [];
  for (const h of hours) {
    for (const m of USAGE_MEASURES) {
      for (const state of ['running', 'suspended'] as const) {
        shares.push({
          subject: h,
          resource: FIELD[m][state],
          unit: FIELD[m].unit,
          exact: h.totals[state][m],
          ratio: HOURS,
        });
      }
    }
  }
  for (const t of traffic) {
    shares.push({ subject: t, resource: 'traffic_in_gb', unit: 'GB', exact: BigInt(t.inBytes), ratio: GB });
    shares.push({ subject: t, resource: 'traffic_out_gb', unit: 'GB', exact: BigInt(t.outBytes), ratio: GB });
  }
  // The report's lines are per reseller and product: each figure is split within one of them.
  const groups = new Map<string, Share[]>();
  for (const share of shares) {
    const key = `${share.subject.resellerId} ${share.subject.productId} ${share.resource}`;
    const group = groups.get(key);
    if (group) group.push(share);
    else groups.set(key, [share]);
  }
  const lines: { line: ServiceUsageLine; order: number }[] = [];
  const FIGURE_ORDER: readonly UsageFigureField[] = [
    ...USAGE_MEASURES.map((m) => FIELD[m].running),
    ...USAGE_MEASURES.map((m) => FIELD[m].suspended),
    'traffic_in_gb',
    'traffic_out_gb',
  ];
  for (const group of groups.values()) {
    const split = apportion(
      group.map((s) => s.exact),
      group[0]?.ratio ?? HOURS,
    );
    group.forEach((share, i) => {
      const micro = split[i] ?? 0n;
      if (micro === 0n) return;
      const s = share.subject;
      lines.push({
        order: FIGURE_ORDER.indexOf(share.resource),
        line: {
          reseller_id: s.resellerId,
          reseller_name: s.resellerName,
          reseller_external_billing_id: s.externalBillingId ?? '',
          service_id: s.service.id,
          domain: s.service.domain,
          product_id: s.productId,
          product_name: s.productName,
          plan_name: planOf(plans, s),
          resource: share.resource,
          quantity: decimalText(micro),
          unit: share.unit,
        },
      });
    });
  }
  return lines
    .sort(
      (a, b) =>
        byCodeUnits(a.line.reseller_name, b.line.reseller_name) ||
        byCodeUnits(a.line.reseller_id, b.line.reseller_id) ||
        byCodeUnits(a.line.domain, b.line.domain) ||
        byCodeUnits(a.line.service_id, b.line.service_id) ||
        byCodeUnits(a.line.product_name, b.line.product_name) ||
        byCodeUnits(a.line.product_id, b.line.product_id) ||
        a.order - b.order,
    )
    .map((l) => l.line);
}
