/**
 * The API's most frequent reads (every per-service request reads its service; a status poll
 * also reads the current job), as SQL written once per dialect instead of built and compiled
 * by Kysely on every request. On SQLite they run on a second, read-only connection: it sees
 * only committed data (WAL gives every statement its own snapshot, and never waits for the
 * writer), so a read can never observe another request's unfinished transaction on the main
 * connection. On PostgreSQL they go through the pool like every other query, as named prepared
 * statements (parsed and planned once per connection), and the service reads of requests that
 * arrive together in one statement (read-batch.ts), as are the quota reads of orders.
 *
 * Both return raw rows of the `services` and `jobs` tables; repos/services.ts and repos/jobs.ts
 * turn them into domain objects, as for any other read.
 */
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type pg from 'pg';
import { createReadBatch } from './read-batch.ts';
import type { JobTable, ResellerQuotaTable, ServiceTable } from './schema.ts';

export interface HotReads {
  /** The service row if it exists and belongs to the reseller. */
  ownedService(resellerId: string, id: string): Promise<ServiceTable | undefined>;
  /** What a status poll needs of the service, from the covering index `services_status`. */
  ownedServiceStatus(resellerId: string, id: string): Promise<ServiceStatusRow | undefined>;
  /** The service's running job, or else its first queued one. */
  currentJob(serviceId: string): Promise<JobTable | undefined>;
  /** The reseller's quota row, if it has a quota (every order asks). */
  resellerQuota(resellerId: string): Promise<ResellerQuotaTable | undefined>;
  /** The VM's IPv6 prefix, its address and its pool's gateway, if it has one (the details show it). */
  vmIpv6(vmId: string): Promise<VmIpv6Row | undefined>;
  /** Bytes in and out of a service on the days in [from, to) (every details read asks). */
  serviceTraffic(serviceId: string, from: number, to: number): Promise<TrafficSums>;
  close(): void;
}

/** A VM's IPv6 prefix as the details show it. */
export interface VmIpv6Row {
  readonly prefix: string;
  readonly address: string;
  readonly gateway: string;
}

/** Sums of `traffic_days` (migration 023); sum() may come back as text or a number. */
export interface TrafficSums {
  readonly bytes_in: number | string;
  readonly bytes_out: number | string;
}

/** The columns of the covering index `services_status` (migration 002). */
export type ServiceStatusRow = Pick<
  ServiceTable,
  'id' | 'reseller_id' | 'status' | 'projected_status' | 'projected_resume' | 'pending_jobs'
>;

/** `{index:NAME}` is SQLite's INDEXED BY (its planner prefers the unique primary key otherwise); PostgreSQL chooses by itself. */
const SQL = {
  ownedService: 'select * from services where id = ? and reseller_id = ?',
  ownedServiceStatus:
    'select id, reseller_id, status, projected_status, projected_resume, pending_jobs from services {index:services_status} where reseller_id = ? and id = ?',
  currentJob: `select * from jobs where service_id = ? and status in ('running', 'queued') order by seq limit 1`,
  resellerQuota: 'select * from reseller_quotas where reseller_id = ?',
  vmIpv6:
    'select x.prefix, x.address, p.gateway from ipv6_prefixes x join ip_pools p on p.id = x.pool_id where x.vm_id = ?',
  serviceTraffic:
    'select coalesce(sum(bytes_in), 0) as bytes_in, coalesce(sum(bytes_out), 0) as bytes_out from traffic_days where service_id = ? and day >= ? and day < ?',
} as const;

type Name = keyof typeof SQL;

/**
 * PostgreSQL's batches of the service reads (read-batch.ts): the rows of many ids in one
 * statement, each then matched to its request by id and reseller.
 */
const PG_BATCH_SQL = {
  ownedServices: 'select * from services where id = any($1::text[])',
  resellerQuotas: 'select * from reseller_quotas where reseller_id = any($1::text[])',
  // By (reseller, id) pairs, so each is an index-only probe of the covering index, as the
  // single read is: by id alone it read each row from the table, and with 1,000,000 services the
  // table's pages are mostly not in memory (1.3x slower than with 1,000, bench/FINDINGS.md).
  ownedServicesStatus:
    'select s.id, s.reseller_id, s.status, s.projected_status, s.projected_resume, s.pending_jobs ' +
    'from unnest($1::text[], $2::text[]) as k(reseller_id, id) ' +
    'join services s on s.reseller_id = k.reseller_id and s.id = k.id',
} as const;

/** `?` placeholders become `$1, $2, ...` for PostgreSQL, which has no index hints. */
const forPostgres = (text: string) => {
  let n = 0;
  return text.replace(/ \{index:\w+\}/g, '').replace(/\?/g, () => `$${++n}`);
};
const forSqlite = (text: string) => text.replace(/\{index:(\w+)\}/g, 'indexed by $1');

/** The SQLite text of each hot read (tests check their query plans). */
export const sqliteHotReadSql = (): Record<Name, string> =>
  Object.fromEntries(Object.entries(SQL).map(([k, v]) => [k, forSqlite(v)])) as Record<Name, string>;

/** SQLite: a read-only connection on the same file, statements prepared on first use. */
export function sqliteHotReads(file: string, busyTimeoutMs = 5000): HotReads {
  const db = new DatabaseSync(file, { readOnly: true });
  db.exec(`pragma busy_timeout = ${Math.floor(busyTimeoutMs)}`);
  const statements = new Map<Name, StatementSync>();
  const first = <T>(name: Name, ...params: (string | number)[]): Promise<T | undefined> => {
    let stmt = statements.get(name);
    if (!stmt) {
      stmt = db.prepare(forSqlite(SQL[name]));
      statements.set(name, stmt);
    }
    return Promise.resolve(stmt.get(...params) as T | undefined);
  };
  return {
    ownedService: (resellerId, id) => first<ServiceTable>('ownedService', id, resellerId),
    ownedServiceStatus: (resellerId, id) => first<ServiceStatusRow>('ownedServiceStatus', resellerId, id),
    currentJob: (serviceId) => first<JobTable>('currentJob', serviceId),
    resellerQuota: (resellerId) => first<ResellerQuotaTable>('resellerQuota', resellerId),
    vmIpv6: (vmId) => first<VmIpv6Row>('vmIpv6', vmId),
    serviceTraffic: async (serviceId, from, to) =>
      (await first<TrafficSums>('serviceTraffic', serviceId, from, to)) ?? { bytes_in: 0, bytes_out: 0 },
    close: () => db.close(),
  };
}

/** PostgreSQL's feature_not_supported, which "cached plan must not change result type" is. */
const CACHED_PLAN_CHANGED = '0A000';

/**
 * PostgreSQL: the same statements through the pool, as named prepared statements: each
 * connection parses and plans each of them once, and afterwards only binds and executes it.
 */
export function pgHotReads(pool: Pick<pg.Pool, 'query'>): HotReads {
  const text = {
    ...(Object.fromEntries(Object.entries(SQL).map(([k, v]) => [k, forPostgres(v)])) as Record<Name, string>),
    ...PG_BATCH_SQL,
  };
  const all = async <T extends pg.QueryResultRow>(
    name: keyof typeof text,
    ...params: (string | readonly string[])[]
  ): Promise<T[]> => {
    try {
      return (await pool.query<T>({ name: `vrp_hot_${name}`, text: text[name], values: params })).rows;
    } catch (err) {
      // A connection that prepared `select *` before a migration added a column refuses to run it
      // again ("cached plan must not change result type"): a newer version's migration while
      // this process still runs. The read is made unprepared instead, as correct and a bit slower.
      if ((err as { code?: string }).code !== CACHED_PLAN_CHANGED) throw err;
      return (await pool.query<T>(text[name], params)).rows;
    }
  };
  const first = async <T extends pg.QueryResultRow>(name: Name, ...params: string[]) =>
    (await all<T>(name, ...params))[0];
  type Owned = { readonly resellerId: string; readonly id: string };
  const matches = (row: { id: string; reseller_id: string }, key: Owned) =>
    row.id === key.id && row.reseller_id === key.resellerId;
  const services = createReadBatch<Owned, ServiceTable>({
    one: ({ resellerId, id }) => first<ServiceTable>('ownedService', id, resellerId),
    many: (keys) =>
      all<ServiceTable>(
        'ownedServices',
        keys.map((k) => k.id),
      ),
    matches,
  });
  const statuses = createReadBatch<Owned, ServiceStatusRow>({
    one: ({ resellerId, id }) => first<ServiceStatusRow>('ownedServiceStatus', resellerId, id),
    many: (keys) =>
      all<ServiceStatusRow>(
        'ownedServicesStatus',
        keys.map((k) => k.resellerId),
        keys.map((k) => k.id),
      ),
    matches,
  });
  // Every order reads its reseller's quota first (most have none: no row).
  const quotas = createReadBatch<string, ResellerQuotaTable>({
    one: (resellerId) => first<ResellerQuotaTable>('resellerQuota', resellerId),
    many: (resellerIds) => all<ResellerQuotaTable>('resellerQuotas', [...new Set(resellerIds)]),
    matches: (row, resellerId) => row.reseller_id === resellerId,
  });
  return {
    ownedService: (resellerId, id) => services.get({ resellerId, id }),
    ownedServiceStatus: (resellerId, id) => statuses.get({ resellerId, id }),
    currentJob: (serviceId) => first<JobTable>('currentJob', serviceId),
    resellerQuota: (resellerId) => quotas.get(resellerId),
    vmIpv6: (vmId) => first<VmIpv6Row>('vmIpv6', vmId),
    serviceTraffic: async (serviceId, from, to) =>
      (await first<TrafficSums>('serviceTraffic', serviceId, String(from), String(to))) ?? {
        bytes_in: 0,
        bytes_out: 0,
      },
    close: () => {},
  };
}
