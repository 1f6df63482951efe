import { type Kysely, type RawBuilder, sql } from 'kysely';
import { uuidv7 } from '../../domain/ids.ts';
import type { JobAction } from '../../domain/status-machine.ts';
import {
  type MeasureTotals,
  USAGE_MEASURES,
  type UsageMeasure,
  type UsageTotals,
} from '../../domain/usage-report.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import { type GatedPart, gatedInsert, gatedUpdate } from '../gated-write.ts';
import type { Database, ServiceTable, UsageIntervalTable } from '../schema.ts';
import { updateWhere } from '../update-row.ts';

/** The actions whose success changes what a service uses: each closes its interval and opens the next. */
const USAGE_ACTIONS: ReadonlySet<JobAction> = new Set([
  'create',
  'upgrade',
  'suspend',
  'unsuspend',
  'terminate',
]);

/** The columns of a service its usage interval is made from. */
export const USAGE_SOURCE = [
  'reseller_id',
  'product_id',
  'cpu',
  'ram',
  'hdd',
  'ip_count',
  'backup',
  'status',
  'host_id',
] as const satisfies readonly (keyof ServiceTable)[];
export type UsageSource = Pick<ServiceTable, (typeof USAGE_SOURCE)[number]>;

/** What an interval measures: a change of any of these closes it and opens the next. */
type Measures = Pick<
  UsageIntervalTable,
  'product_id' | 'cpu' | 'ram' | 'hdd' | 'ip' | 'backup' | 'suspended'
>;

/** The service's open interval, as a read that joins it (`usage_intervals as u`) selects it. */
export const OPEN_INTERVAL = [
  'u.id as usage_id',
  'u.product_id as usage_product_id',
  'u.cpu as usage_cpu',
  'u.ram as usage_ram',
  'u.hdd as usage_hdd',
  'u.ip as usage_ip',
  'u.backup as usage_backup',
  'u.suspended as usage_suspended',
] as const;

/** OPEN_INTERVAL's columns in a row read with them (null when the service has none open). */
export interface OpenIntervalColumns {
  readonly usage_id: string | null;
  readonly usage_product_id: string | null;
  readonly usage_cpu: number | null;
  readonly usage_ram: number | null;
  readonly usage_hdd: number | null;
  readonly usage_ip: number | null;
  readonly usage_backup: number | null;
  readonly usage_suspended: number | null;
}

/** The service's USAGE_SOURCE columns once `set` (an update's values) is written over `before`. */
export function usageSourceAfter(before: UsageSource, set: Partial<UsageSource>): UsageSource {
  const after = { ...before };
  const copy = <K extends keyof UsageSource>(column: K) => {
    const value = set[column];
    if (value !== undefined) after[column] = value;
  };
  for (const column of USAGE_SOURCE) copy(column);
  return after;
}

/**
 * Brings the service's usage interval in line with the service as a job just left it, in the
 * transaction of the job's end (jobs/run-job.ts), given the interval open before (`read`, the job
 * end's read with OPEN_INTERVAL) and the service after the job (`service`, its USAGE_SOURCE
 * columns; usageSourceAfter). A service on a host, not terminated, has one open interval with its
 * current resources and suspension; a change closes the open one at `now` and opens the next; a
 * terminated service has none open. A job that changed nothing (a repeat) leaves the interval as
 * it is, and an action that changes no usage writes nothing.
 *
 * Returns the writes to make with the job's end (GatedPart). An interval closed for the next to
 * open is written here first: the index that allows one open interval per service checks each
 * row as it is written, so on PostgreSQL the two cannot be parts of one statement.
 */
export async function usageChange(
  tx: Kysely<Database>,
  action: JobAction,
  read: OpenIntervalColumns,
  service: UsageSource,
  serviceId: string,
  now: number,
): Promise<GatedPart[]> {
  if (!USAGE_ACTIONS.has(action)) return [];
  const open = read.usage_id;
  const live = service.status !== 'terminated' && service.host_id !== null;
  const next: UsageIntervalTable | undefined = live
    ? {
        id: uuidv7(now, randomPoolBytes(16)),
        service_id: serviceId,
        reseller_id: service.reseller_id,
        product_id: service.product_id,
        cpu: service.cpu,
        ram: service.ram,
        hdd: service.hdd,
        ip: service.ip_count,
        backup: service.backup,
        suspended: service.status === 'suspended' ? 1 : 0,
        started_at: now,
        ended_at: null,
      }
    : undefined;
  if (open !== null && next && sameUsage(read, next)) return [];
  if (open === null) return next ? [gatedInsert('usage_intervals', next)] : [];
  const close = { table: 'usage_intervals', set: { ended_at: now }, where: { id: open } } as const;
  if (!next) return [gatedUpdate(close)];
  await updateWhere(tx, close.table, close.set, close.where);
  return [gatedInsert('usage_intervals', next)];
}

/** Whether the open interval (as read) measures what `next` would. */
function sameUsage(open: OpenIntervalColumns, next: Measures): boolean {
  return (
    open.usage_product_id === next.product_id &&
    open.usage_cpu === next.cpu &&
    open.usage_ram === next.ram &&
    open.usage_hdd === next.hdd &&
    open.usage_ip === next.ip &&
    open.usage_backup === next.backup &&
    open.usage_suspended === next.suspended
  );
}

/** The intervals of one service, oldest first (tests, the operator's service page). */
export async function listServiceIntervals(
  db: Kysely<Database>,
  serviceId: string,
): Promise<UsageIntervalTable[]> {
  return (
    db
      .selectFrom('usage_intervals')
      .selectAll()
      .where('service_id', '=', serviceId)
      .orderBy('started_at')
      // Two changes in one millisecond leave an empty interval: it comes before the one still open.
      .orderBy(sql`coalesce(ended_at, ${Number.MAX_SAFE_INTEGER})`)
      .execute()
  );
}

/** A period: [from, until), epoch milliseconds; `until` is the period's end or now, whichever is first. */
export interface UsagePeriod {
  readonly from: number;
  readonly until: number;
  readonly resellerId?: string;
}

/** Totals of one reseller's use of one product in a period, as the store sums them. */
export interface UsageTotalsRow {
  readonly resellerId: string;
  readonly resellerName: string;
  readonly productId: string;
  readonly productName: string;
  readonly totals: UsageTotals;
}

/** What each measure sums per interval: 1 for the service itself, else the resource's column. */
const MEASURE_SQL: Readonly<Record<UsageMeasure, RawBuilder<unknown>>> = {
  service: sql`1`,
  cpu: sql.ref('i.cpu'),
  ram: sql.ref('i.ram'),
  hdd: sql.ref('i.hdd'),
  ip: sql.ref('i.ip'),
  backup: sql.ref('i.backup'),
};
const STATES = ['running', 'suspended'] as const;

/**
 * Per reseller and product, the milliseconds x resource its services used in the period, time
 * suspended apart, each interval clipped to [from, until) (one still open runs until `until`).
 *
 * Exact and overflow-free on both databases: milliseconds x GB summed over a million services
 * could pass 2^63, so each sum is split into whole seconds and remaining milliseconds (both far
 * from it), put back together with BigInt. The reads are two index ranges: intervals still open,
 * and those that ended after `from` (usage_intervals_reseller_end for one reseller,
 * usage_intervals_end for all); one that ended before `from` cannot overlap the period.
 */
export async function sumUsage(db: Kysely<Database>, period: UsagePeriod): Promise<UsageTotalsRow[]> {
  const rows = await sumUsageRows(db, period, false);
  return rows.map((row) => totalsRowOf(row));
}

/** A service whose use a per-service sum counts: what a billing line names it by. */
export interface UsageService {
  readonly id: string;
  /** Empty if the service's record is gone. */
  readonly domain: string;
  /** Its resources now (to name the plan they match). */
  readonly cpu: number;
  readonly ram: number;
  readonly hdd: number;
}

/** One service's use of one product in a period, with its reseller's external billing id. */
export interface ServiceUsageTotalsRow extends UsageTotalsRow {
  readonly externalBillingId: string | null;
  readonly service: UsageService;
}

/**
 * The sums of sumUsage, per service besides per reseller and product: the same intervals, clipped
 * the same way, in the same query with one more grouping column. So a reseller's product sums
 * to exactly what sumUsage gives it (whole numbers). Ordered by reseller, product, then domain.
 */
export async function sumUsageByService(
  db: Kysely<Database>,
  period: UsagePeriod,
): Promise<ServiceUsageTotalsRow[]> {
  const rows = await sumUsageRows(db, period, true);
  return rows.map((row) => ({
    ...totalsRowOf(row),
    externalBillingId: row['external_billing_id'] == null ? null : String(row['external_billing_id']),
    service: {
      id: String(row['service_id']),
      domain: row['domain_name'] == null ? '' : String(row['domain_name']),
      cpu: Number(row['service_cpu'] ?? 0),
      ram: Number(row['service_ram'] ?? 0),
      hdd: Number(row['service_hdd'] ?? 0),
    },
  }));
}

type SumRow = Record<string, string | number | null>;

async function sumUsageRows(
  db: Kysely<Database>,
  period: UsagePeriod,
  perService: boolean,
): Promise<SumRow[]> {
  if (period.until <= period.from) return [];
  // node:sqlite binds numbers as REAL: cast, so that SQLite divides integers as PostgreSQL does.
  const from = sql`cast(${period.from} as bigint)`;
  const until = sql`cast(${period.until} as bigint)`;
  const reseller = period.resellerId === undefined ? sql`` : sql`reseller_id = ${period.resellerId} and`;
  const start = sql`(case when started_at < ${from} then ${from} else started_at end)`;
  const columns = STATES.flatMap((state) =>
    USAGE_MEASURES.flatMap((m) => {
      const value = sql`(case when i.suspended = ${sql.lit(state === 'suspended' ? 1 : 0)} then ${MEASURE_SQL[m]} else 0 end)`;
      return [
        sql`cast(sum((i.d / 1000) * ${value}) as text) as ${sql.ref(`${state}_${m}_s`)}`,
        sql`cast(sum((i.d % 1000) * ${value}) as text) as ${sql.ref(`${state}_${m}_ms`)}`,
      ];
    }),
  );
  const service = perService
    ? {
        columns: sql`i.service_id, s.domain_name, s.cpu as service_cpu, s.ram as service_ram,
          s.hdd as service_hdd, r.external_billing_id,`,
        join: sql`left join services s on s.id = i.service_id`,
        group: sql`, i.service_id, s.domain_name, s.cpu, s.ram, s.hdd, r.external_billing_id`,
        order: sql`, s.domain_name, i.service_id`,
      }
    : { columns: sql``, join: sql``, group: sql``, order: sql`` };
  const { rows } = await sql<SumRow>`
    select i.reseller_id, r.name as reseller_name, i.product_id, p.name as product_name, ${service.columns}
      count(distinct i.service_id) as services, ${sql.join(columns)}
    from (
      select service_id, reseller_id, product_id, suspended, cpu, ram, hdd, ip, backup,
        ${until} - ${start} as d
      from usage_intervals where ${reseller} ended_at is null and started_at < ${until}
      union all
      select service_id, reseller_id, product_id, suspended, cpu, ram, hdd, ip, backup,
        (case when ended_at > ${until} then ${until} else ended_at end) - ${start} as d
      from usage_intervals where ${reseller} ended_at > ${from} and started_at < ${until}
    ) i
    join resellers r on r.id = i.reseller_id
    left join products p on p.id = i.product_id
    ${service.join}
    group by i.reseller_id, r.name, i.product_id, p.name${service.group}
    order by r.name, i.reseller_id, p.name, i.product_id${service.order}`.execute(db);
  return rows;
}

function totalsRowOf(row: SumRow): UsageTotalsRow {
  const ms = (state: (typeof STATES)[number], m: UsageMeasure) =>
    BigInt(row[`${state}_${m}_s`] ?? 0) * 1000n + BigInt(row[`${state}_${m}_ms`] ?? 0);
  const of = (state: (typeof STATES)[number]): MeasureTotals => ({
    service: ms(state, 'service'),
    cpu: ms(state, 'cpu'),
    ram: ms(state, 'ram'),
    hdd: ms(state, 'hdd'),
    ip: ms(state, 'ip'),
    backup: ms(state, 'backup'),
  });
  return {
    resellerId: String(row['reseller_id']),
    resellerName: String(row['reseller_name']),
    productId: String(row['product_id']),
    productName: row['product_name'] === null ? '' : String(row['product_name']),
    totals: { running: of('running'), suspended: of('suspended'), services: Number(row['services']) },
  };
}
