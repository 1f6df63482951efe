import { type Kysely, sql, type Transaction } from 'kysely';
import { type CounterReading, counterDelta, nextUtcMonth, utcDay, utcMonth } from '../../domain/traffic.ts';
import type { HotReads } from '../hot-reads.ts';
import type { Database, TrafficMonthTable } from '../schema.ts';

/** Traffic accounting's tables (migration 023): samples, bytes per day, limits, per-host totals. */

/** Most keys in one `in (...)` list. */
const CHUNK = 500;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/** A VM's bytes counted by one sample, with the service they belong to. */
export interface CountedTraffic {
  readonly serviceId: string;
  readonly resellerId: string;
  readonly productId: string;
  readonly inBytes: number;
  readonly outBytes: number;
}

/**
 * Records one reading of the counters of a host's running VMs, taken at `now`: per VM that is
 * a service (not terminated), the bytes since its last sample (domain/traffic.ts,
 * counterDelta) are added to the service's day and to the host's totals, and the reading
 * becomes the last sample. A VM whose last sample another process replaced since it was read
 * is left out: each difference is counted by exactly one process. One transaction per host;
 * rows are written in the order of the VMs' ids, so two processes never wait on each other in
 * a cycle. Returns what it counted.
 */
export async function recordSamples(
  db: Kysely<Database>,
  hostId: string,
  counters: ReadonlyMap<string, { inBytes: number; outBytes: number; session: string }>,
  now: number,
): Promise<CountedTraffic[]> {
  const ids = [...counters.keys()].sort();
  if (ids.length === 0) return [];
  const services = new Map<string, { reseller_id: string; product_id: string }>();
  const last = new Map<string, CounterReading & { seq: number }>();
  for (const part of chunks(ids)) {
    const [rows, samples] = await Promise.all([
      db
        .selectFrom('services')
        .select(['id', 'reseller_id', 'product_id'])
        .where('id', 'in', part)
        .where('status', '!=', 'terminated')
        .execute(),
      db.selectFrom('traffic_samples').selectAll().where('vm_id', 'in', part).execute(),
    ]);
    for (const r of rows) services.set(r.id, r);
    for (const s of samples)
      last.set(s.vm_id, {
        hostId: s.host_id,
        session: s.session,
        inBytes: Number(s.counter_in),
        outBytes: Number(s.counter_out),
        seq: Number(s.seq),
      });
  }
  const day = utcDay(now);
  return db.transaction().execute(async (tx) => {
    const counted: CountedTraffic[] = [];
    let hostIn = 0;
    let hostOut = 0;
    for (const id of ids) {
      const service = services.get(id);
      const reading = counters.get(id);
      if (!service || !reading) continue;
      const now_ = { hostId, ...reading };
      const previous = last.get(id);
      const delta = counterDelta(previous, now_);
      const row = {
        host_id: hostId,
        session: reading.session,
        counter_in: reading.inBytes,
        counter_out: reading.outBytes,
        sampled_at: now,
      };
      if (previous === undefined) {
        const r = await tx
          .insertInto('traffic_samples')
          .values({ vm_id: id, ...row, seq: 1 })
          .onConflict((oc) => oc.column('vm_id').doNothing())
          .returning('vm_id')
          .executeTakeFirst();
        if (!r) continue;
      } else {
        const r = await tx
          .updateTable('traffic_samples')
          .set({ ...row, seq: previous.seq + 1 })
          .where('vm_id', '=', id)
          .where('seq', '=', previous.seq)
          .executeTakeFirst();
        if (r.numUpdatedRows === 0n) continue;
      }
      if (delta.inBytes === 0 && delta.outBytes === 0) continue;
      await addDay(tx, id, day, delta.inBytes, delta.outBytes);
      hostIn += delta.inBytes;
      hostOut += delta.outBytes;
      counted.push({
        serviceId: id,
        resellerId: service.reseller_id,
        productId: service.product_id,
        ...delta,
      });
    }
    if (hostIn > 0 || hostOut > 0) {
      await tx
        .insertInto('traffic_host_totals')
        .values({ host_id: hostId, bytes_in: hostIn, bytes_out: hostOut })
        .onConflict((oc) =>
          oc.column('host_id').doUpdateSet((eb) => ({
            bytes_in: eb('traffic_host_totals.bytes_in', '+', eb.ref('excluded.bytes_in')),
            bytes_out: eb('traffic_host_totals.bytes_out', '+', eb.ref('excluded.bytes_out')),
          })),
        )
        .execute();
    }
    return counted;
  });
}

async function addDay(
  tx: Transaction<Database>,
  serviceId: string,
  day: number,
  inBytes: number,
  outBytes: number,
): Promise<void> {
  await tx
    .insertInto('traffic_days')
    .values({ service_id: serviceId, day, bytes_in: inBytes, bytes_out: outBytes })
    .onConflict((oc) =>
      oc.columns(['service_id', 'day']).doUpdateSet((eb) => ({
        bytes_in: eb('traffic_days.bytes_in', '+', eb.ref('excluded.bytes_in')),
        bytes_out: eb('traffic_days.bytes_out', '+', eb.ref('excluded.bytes_out')),
      })),
    )
    .execute();
}

/** Bytes in and out of a service (or each of several) in the UTC month of `now`. */
export async function monthTraffic(
  db: Kysely<Database>,
  serviceIds: readonly string[],
  now: number,
): Promise<Map<string, { inBytes: number; outBytes: number }>> {
  const out = new Map<string, { inBytes: number; outBytes: number }>();
  const from = utcMonth(now);
  const to = nextUtcMonth(now);
  for (const part of chunks(serviceIds)) {
    const rows = await db
      .selectFrom('traffic_days')
      .select((eb) => [
        'service_id',
        eb.fn.sum<number | string>('bytes_in').as('bytes_in'),
        eb.fn.sum<number | string>('bytes_out').as('bytes_out'),
      ])
      .where('service_id', 'in', part)
      .where('day', '>=', from)
      .where('day', '<', to)
      .groupBy('service_id')
      .execute();
    for (const r of rows)
      out.set(r.service_id, { inBytes: Number(r.bytes_in ?? 0), outBytes: Number(r.bytes_out ?? 0) });
  }
  return out;
}

/**
 * One service's bytes in the UTC month of `now` (zero when none were counted), through the hot
 * reads (store/hot-reads.ts): on SQLite a read-only connection that sees committed data only
 * and never waits for a transaction open on the main one, as the rest of details.
 */
export async function serviceMonthTraffic(
  reads: Pick<HotReads, 'serviceTraffic'>,
  serviceId: string,
  now: number,
): Promise<{ inBytes: number; outBytes: number }> {
  const from = utcMonth(now);
  const r = await reads.serviceTraffic(serviceId, from, nextUtcMonth(now));
  return { inBytes: Number(r.bytes_in), outBytes: Number(r.bytes_out) };
}

/**
 * Records that a service went past its quota in `month`: false if that was recorded already
 * (by another process, or an earlier pass), so whatever follows happens once per month.
 */
export async function recordExceeded(
  tx: Transaction<Database>,
  row: Omit<TrafficMonthTable, 'lifted_at'>,
): Promise<boolean> {
  const r = await tx
    .insertInto('traffic_months')
    .values({ ...row, lifted_at: null })
    .onConflict((oc) => oc.columns(['service_id', 'month']).doNothing())
    .returning('service_id')
    .executeTakeFirst();
  return r !== undefined;
}

/** The services on `hostId` throttled in the month of `now`, with their rate: what must hold on the host. */
export async function throttlesOnHost(
  db: Kysely<Database>,
  hostId: string,
  now: number,
): Promise<{ serviceId: string; mbit: number }[]> {
  const rows = await db
    .selectFrom('traffic_months as t')
    .innerJoin('services as s', 's.id', 't.service_id')
    .select(['t.service_id', 't.throttle_mbit'])
    .where('t.month', '=', utcMonth(now))
    .where('t.action', '=', 'throttle')
    .where('t.lifted_at', 'is', null)
    .where('s.host_id', '=', hostId)
    .where('s.status', '!=', 'terminated')
    .execute();
  return rows.map((r) => ({ serviceId: r.service_id, mbit: Number(r.throttle_mbit) }));
}

/**
 * Throttles of months before the one of `now` not lifted yet, then those lifted since
 * `liftedSince` (`lifted`): `keep` when the service is gone (nothing to lift on a hypervisor) or
 * throttled again this month (the limit stays).
 */
export async function throttlesToLift(
  db: Kysely<Database>,
  now: number,
  liftedSince: number,
): Promise<{ serviceId: string; month: number; keep: boolean; lifted: boolean }[]> {
  const month = utcMonth(now);
  const rows = await db
    .selectFrom('traffic_months as t')
    .leftJoin('services as s', 's.id', 't.service_id')
    .leftJoin('traffic_months as c', (j) =>
      j.onRef('c.service_id', '=', 't.service_id').on('c.month', '=', month).on('c.action', '=', 'throttle'),
    )
    .select(['t.service_id', 't.month', 't.lifted_at', 's.status', 'c.month as current'])
    .where('t.month', '<', month)
    .where('t.action', '=', 'throttle')
    .where((eb) => eb.or([eb('t.lifted_at', 'is', null), eb('t.lifted_at', '>=', liftedSince)]))
    // Those still to lift first.
    .orderBy(sql`t.lifted_at is null`, 'desc')
    .orderBy('t.month')
    .limit(500)
    .execute();
  return rows.map((r) => ({
    serviceId: r.service_id,
    month: Number(r.month),
    keep: r.status === null || r.status === 'terminated' || r.current !== null,
    lifted: r.lifted_at !== null,
  }));
}

/** Marks a throttle lifted; false if another process did first. */
export async function markLifted(
  db: Kysely<Database>,
  serviceId: string,
  month: number,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('traffic_months')
    .set({ lifted_at: now })
    .where('service_id', '=', serviceId)
    .where('month', '=', month)
    .where('lifted_at', 'is', null)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Bytes counted on each host since the start, by host name (hosts removed since are left out). */
export async function hostTrafficTotals(
  db: Kysely<Database>,
): Promise<{ host: string; inBytes: number; outBytes: number }[]> {
  const rows = await db
    .selectFrom('traffic_host_totals as t')
    .innerJoin('hypervisor_hosts as h', 'h.id', 't.host_id')
    .select(['h.name', 't.bytes_in', 't.bytes_out'])
    .orderBy('h.name')
    .execute();
  return rows.map((r) => ({ host: r.name, inBytes: Number(r.bytes_in), outBytes: Number(r.bytes_out) }));
}

/**
 * The traffic days that begin in [from, to), each with its service, the service's reseller and
 * its current product: the one attribution both the report and the per-service CSV sum over, so a
 * reseller's product sums to the same bytes in both.
 */
function trafficInPeriod(
  db: Kysely<Database>,
  period: { readonly from: number; readonly to: number; readonly resellerId?: string | undefined },
) {
  const q = db
    .selectFrom('traffic_days as d')
    .innerJoin('services as s', 's.id', 'd.service_id')
    .innerJoin('resellers as r', 'r.id', 's.reseller_id')
    .leftJoin('products as p', 'p.id', 's.product_id')
    .where('d.day', '>=', period.from)
    .where('d.day', '<', period.to);
  return period.resellerId === undefined ? q : q.where('s.reseller_id', '=', period.resellerId);
}

/**
 * Bytes in and out per reseller and product over the UTC days that begin in [from, to) (the
 * services' current product), for the usage report.
 */
export async function sumTraffic(
  db: Kysely<Database>,
  period: { readonly from: number; readonly to: number; readonly resellerId?: string | undefined },
): Promise<
  {
    resellerId: string;
    resellerName: string;
    productId: string;
    productName: string;
    services: number;
    inBytes: number;
    outBytes: number;
  }[]
> {
  const q = trafficInPeriod(db, period)
    .select((eb) => [
      's.reseller_id',
      'r.name as reseller_name',
      's.product_id',
      'p.name as product_name',
      eb.fn.count<number | string>('s.id').distinct().as('services'),
      eb.fn.sum<number | string>('d.bytes_in').as('bytes_in'),
      eb.fn.sum<number | string>('d.bytes_out').as('bytes_out'),
    ])
    .groupBy(['s.reseller_id', 'r.name', 's.product_id', 'p.name']);
  const rows = await q.execute();
  return rows.map((r) => ({
    resellerId: r.reseller_id,
    resellerName: r.reseller_name,
    productId: r.product_id,
    productName: r.product_name ?? '',
    services: Number(r.services),
    inBytes: Number(r.bytes_in ?? 0),
    outBytes: Number(r.bytes_out ?? 0),
  }));
}

/**
 * Bytes in and out per service over the UTC days that begin in [from, to), with its reseller and
 * current product (as sumTraffic attributes them, so a reseller's product sums to exactly what
 * sumTraffic gives it), for the per-service usage CSV.
 */
export async function sumTrafficByService(
  db: Kysely<Database>,
  period: { readonly from: number; readonly to: number; readonly resellerId?: string | undefined },
): Promise<
  {
    resellerId: string;
    resellerName: string;
    externalBillingId: string | null;
    productId: string;
    productName: string;
    service: { id: string; domain: string; cpu: number; ram: number; hdd: number };
    inBytes: number;
    outBytes: number;
  }[]
> {
  const q = trafficInPeriod(db, period)
    .select((eb) => [
      's.id',
      's.domain_name',
      's.cpu',
      's.ram',
      's.hdd',
      's.reseller_id',
      'r.name as reseller_name',
      'r.external_billing_id',
      's.product_id',
      'p.name as product_name',
      eb.fn.sum<number | string>('d.bytes_in').as('bytes_in'),
      eb.fn.sum<number | string>('d.bytes_out').as('bytes_out'),
    ])
    .groupBy([
      's.id',
      's.domain_name',
      's.cpu',
      's.ram',
      's.hdd',
      's.reseller_id',
      'r.name',
      'r.external_billing_id',
      's.product_id',
      'p.name',
    ]);
  const rows = await q.execute();
  return rows.map((r) => ({
    resellerId: r.reseller_id,
    resellerName: r.reseller_name,
    externalBillingId: r.external_billing_id,
    productId: r.product_id,
    productName: r.product_name ?? '',
    service: { id: r.id, domain: r.domain_name, cpu: r.cpu, ram: r.ram, hdd: r.hdd },
    inBytes: Number(r.bytes_in ?? 0),
    outBytes: Number(r.bytes_out ?? 0),
  }));
}
