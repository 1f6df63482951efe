/**
 * The API's most frequent reads (every per-service request reads its service; a status poll
 * also reads the current job), as SQL written once per dialect instead of built and compiled
 * by Kysely on every request. On SQLite they run on a second, read-only connection: it sees
 * only committed data (WAL gives every statement its own snapshot, and never waits for the
 * writer), so a read can never observe another request's unfinished transaction on the main
 * connection. On PostgreSQL they go through the pool like every other query, as named prepared
 * statements (parsed once per connection, pg-named.ts), and the service reads of requests that
 * arrive together in one statement (read-batch.ts), as are the quota reads of orders.
 *
 * Both return raw rows of the `services` and `jobs` tables; repos/services.ts and repos/jobs.ts
 * turn them into domain objects, as for any other read.
 */
import { DatabaseSync } from 'node:sqlite';
import type pg from 'pg';
import { hiddenArrays } from './hidden-arrays.ts';
import { nameStatement, sendNamed } from './pg-named.ts';
import { createReadBatch } from './read-batch.ts';
import type { JobTable, ResellerQuotaTable, ServiceTable } from './schema.ts';
import { onCommit } from './sqlite-group-commit.ts';
import { type RowReader, rowReader } from './sqlite-rows.ts';

export interface HotReads {
  /** The service row if it exists and belongs to the reseller. */
  ownedService(resellerId: string, id: string): Promise<ServiceTable | undefined>;
  /** What a status poll needs of the service, from the covering index `services_status`. */
  ownedServiceStatus(resellerId: string, id: string): Promise<ServiceStatusRow | undefined>;
  /** The service's running job, or else its first queued one. */
  currentJob(serviceId: string): Promise<JobTable | undefined>;
  /** The reseller's quota row, if it has a quota (every order asks). */
  resellerQuota(resellerId: string): Promise<ResellerQuotaTable | undefined>;
  /** Bytes in and out of a service on the days in [from, to) (the operator's details ask). */
  serviceTraffic(serviceId: string, from: number, to: number): Promise<TrafficSums>;
  /**
   * The service with what the reseller's details of it show, in one statement (one snapshot):
   * its row, its IPv6 prefix and its bytes on the days in [from, to).
   */
  serviceDetails(
    resellerId: string,
    id: string,
    from: number,
    to: number,
  ): Promise<ServiceDetailsRow | undefined>;
  close(): void;
}

/** Sums of `traffic_days` (migration 023); sum() may come back as text or a number. */
export interface TrafficSums {
  readonly bytes_in: number | string;
  readonly bytes_out: number | string;
}

/**
 * The details read's row: the service's columns as they are, the IPv6 prefix's `v6_` (null
 * without one) and the traffic sums.
 */
export type ServiceDetailsRow = ServiceTable & {
  readonly v6_prefix: string | null;
  /** With `v6_prefix` (null when it is). */
  readonly v6_address: string;
  readonly v6_gateway: string;
  readonly traffic_in: number | string;
  readonly traffic_out: number | string;
};

/** The columns of the covering index `services_status` (migration 002). */
export type ServiceStatusRow = Pick<
  ServiceTable,
  'id' | 'reseller_id' | 'status' | 'projected_status' | 'projected_resume' | 'pending_jobs'
>;

/** Those columns, as the reads of the status write them. */
const STATUS_COLUMNS = 'id, reseller_id, status, projected_status, projected_resume, pending_jobs';

/** `{index:NAME}` is SQLite's INDEXED BY (its planner prefers the unique primary key otherwise); PostgreSQL chooses by itself. */
const SQL = {
  ownedService: 'select * from services where id = ? and reseller_id = ?',
  ownedServiceStatus: `select ${STATUS_COLUMNS} from services {index:services_status} where reseller_id = ? and id = ?`,
  currentJob: `select * from jobs where service_id = ? and status in ('running', 'queued') order by seq limit 1`,
  resellerQuota: 'select * from reseller_quotas where reseller_id = ?',
  serviceTraffic:
    'select coalesce(sum(bytes_in), 0) as bytes_in, coalesce(sum(bytes_out), 0) as bytes_out from traffic_days where service_id = ? and day >= ? and day < ?',
  // Parameters: from, to, from, to (the traffic's days), id, reseller.
  serviceDetails: detailsSql('where s.id = ? and s.reseller_id = ?'),
} as const;

type Name = keyof typeof SQL;

/**
 * The details read: what `from` names (a table `s` of services, and a day range) joined to the
 * IPv6 prefix and the traffic sums of the range, each an index search. `dayFrom`/`dayTo` are
 * the range's bounds: parameters for one service, the batch's columns on PostgreSQL.
 */
function detailsSql(where: string, from = 'services s', dayFrom = '?', dayTo = '?'): string {
  const traffic = (column: string) =>
    `(select coalesce(sum(${column}), 0) from traffic_days where service_id = s.id and day >= ${dayFrom} and day < ${dayTo})`;
  return (
    'select s.*, ' +
    // A prefix counts with its pool only (as an inner join of the two would have it).
    'case when p.id is not null then x.prefix end as v6_prefix, x.address as v6_address, p.gateway as v6_gateway, ' +
    `${traffic('bytes_in')} as traffic_in, ${traffic('bytes_out')} as traffic_out ` +
    `from ${from} ` +
    'left join ipv6_prefixes x on x.vm_id = s.id left join ip_pools p on p.id = x.pool_id ' +
    where
  );
}

/**
 * PostgreSQL's batches of the service reads (read-batch.ts): the rows of many keys in one
 * statement, each then matched to its request by id and reseller. Each key is its own probe (a
 * lateral read of at most one row), from arrays the planner cannot count (hidden-arrays.ts): so
 * a connection keeps one plan for each text instead of planning every run, and the plan probes
 * the index whatever the table's size (counting on ten keys, it would scan a small table).
 */
const lateral = (columns: string, table: string, where: string) =>
  `cross join lateral (select ${columns} from ${table} where ${where} limit 1)`;
const PG_BATCH_SQL = {
  ownedServices: `select s.* from ${hiddenArrays(['text'], 1, 'k(id)')} ${lateral('*', 'services', 'id = k.id')} s`,
  resellerQuotas:
    `select q.* from ${hiddenArrays(['text'], 1, 'k(reseller_id)')} ` +
    `${lateral('*', 'reseller_quotas', 'reseller_id = k.reseller_id')} q`,
  // By (reseller, id) pairs, so each is an index-only probe of the covering index, as the
  // single read is: by id alone it read each row from the table, and with 1,000,000 services the
  // table's pages are mostly not in memory (1.3x slower than with 1,000, bench/FINDINGS.md).
  ownedServicesStatus:
    `select s.* from ${hiddenArrays(['text', 'text'], 1, 'k(reseller_id, id)')} ` +
    `${lateral(STATUS_COLUMNS, 'services', 'reseller_id = k.reseller_id and id = k.id')} s`,
  // Each key's day range is its own (`k.day_from` comes back to match rows to keys).
  servicesDetails: detailsSql(
    '',
    `${hiddenArrays(['text', 'text', 'bigint', 'bigint'], 1, 'k(reseller_id, id, day_from, day_to)')} ` +
      `${lateral('*', 'services', 'reseller_id = k.reseller_id and id = k.id')} s`,
    'k.day_from',
    'k.day_to',
  ).replace(/^select /, 'select k.day_from as k_day_from, '),
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

/** The longest the SQLite hot reads read from one snapshot (ms). */
const SNAPSHOT_MS = 1;

/**
 * SQLite: a read-only connection on the same file, statements prepared on first use.
 *
 * The reads of one turn of the event loop share one read transaction (one snapshot), begun at
 * the first and ended when the turn's immediates run, or at the first read after SNAPSHOT_MS.
 * A read transaction of its own per read took its locks on the WAL's index each time, two
 * system calls: a read took 9 µs alone against 2 µs in a shared one, and was a quarter of a
 * status request's CPU (bench/FINDINGS.md). What a read sees: every write of this process
 * committed before it (the snapshot ends as soon as one commits, onCommit, before that write's
 * request is answered); a write of another process (a worker running apart, a second API
 * process) if it committed more than SNAPSHOT_MS before the read, or before its turn began.
 */
export function sqliteHotReads(file: string, busyTimeoutMs = 5000): HotReads {
  const db = new DatabaseSync(file, { readOnly: true });
  db.exec(`pragma busy_timeout = ${Math.floor(busyTimeoutMs)}`);
  const statements = new Map<Name, RowReader>();
  let began = 0;
  const endSnapshot = () => {
    if (db.isOpen && db.isTransaction) db.exec('rollback');
  };
  const stopListening = onCommit(file, endSnapshot);
  const first = <T>(name: Name, ...params: (string | number)[]): Promise<T | undefined> => {
    let rows = statements.get(name);
    if (!rows) {
      rows = rowReader(db.prepare(forSqlite(SQL[name])));
      statements.set(name, rows);
    }
    if (db.isTransaction && performance.now() - began > SNAPSHOT_MS) endSnapshot();
    if (!db.isTransaction) {
      db.exec('begin');
      began = performance.now();
      setImmediate(endSnapshot);
    }
    return Promise.resolve(rows.get(params) as T | undefined);
  };
  // The orders that arrive together (one group commit) read each of their resellers' quotas
  // once: a read after another connection's commit finds this connection's page cache dropped
  // (WAL), and reads its pages again.
  const quotas = createReadBatch<string, ResellerQuotaTable>({
    one: (resellerId) => first<ResellerQuotaTable>('resellerQuota', resellerId),
    many: async (resellerIds) =>
      (
        await Promise.all(
          [...new Set(resellerIds)].map((id) => first<ResellerQuotaTable>('resellerQuota', id)),
        )
      ).filter((row): row is ResellerQuotaTable => row !== undefined),
    matches: (row, resellerId) => row.reseller_id === resellerId,
  });
  return {
    ownedService: (resellerId, id) => first<ServiceTable>('ownedService', id, resellerId),
    ownedServiceStatus: (resellerId, id) => first<ServiceStatusRow>('ownedServiceStatus', resellerId, id),
    currentJob: (serviceId) => first<JobTable>('currentJob', serviceId),
    resellerQuota: (resellerId) => quotas.get(resellerId),
    serviceTraffic: async (serviceId, from, to) =>
      (await first<TrafficSums>('serviceTraffic', serviceId, from, to)) ?? { bytes_in: 0, bytes_out: 0 },
    serviceDetails: (resellerId, id, from, to) =>
      first<ServiceDetailsRow>('serviceDetails', from, to, from, to, id, resellerId),
    close: () => {
      stopListening();
      endSnapshot();
      db.close();
    },
  };
}

/**
 * PostgreSQL: the same statements through the pool, as named prepared statements (pg-named.ts):
 * each connection parses each of them once, and after its first runs keeps a plan for it.
 */
export function pgHotReads(pool: Pick<pg.Pool, 'query'>): HotReads {
  const text = {
    ...(Object.fromEntries(Object.entries(SQL).map(([k, v]) => [k, forPostgres(v)])) as Record<Name, string>),
    ...PG_BATCH_SQL,
  };
  for (const t of Object.values(text)) nameStatement(t);
  const all = async <T extends pg.QueryResultRow>(
    name: keyof typeof text,
    ...params: (string | readonly string[])[]
  ): Promise<T[]> => (await sendNamed(pool, text[name], params)).rows;
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
  type Days = Owned & { readonly from: number; readonly to: number };
  const details = createReadBatch<Days, ServiceDetailsRow & { readonly k_day_from?: number }>({
    one: ({ resellerId, id, from, to }) =>
      first<ServiceDetailsRow>(
        'serviceDetails',
        String(from),
        String(to),
        String(from),
        String(to),
        id,
        resellerId,
      ),
    many: (keys) =>
      all<ServiceDetailsRow & { k_day_from: number }>(
        'servicesDetails',
        keys.map((k) => k.resellerId),
        keys.map((k) => k.id),
        keys.map((k) => String(k.from)),
        keys.map((k) => String(k.to)),
      ),
    matches: (row, key) => matches(row, key) && row.k_day_from === key.from,
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
    serviceTraffic: async (serviceId, from, to) =>
      (await first<TrafficSums>('serviceTraffic', serviceId, String(from), String(to))) ?? {
        bytes_in: 0,
        bytes_out: 0,
      },
    serviceDetails: (resellerId, id, from, to) => details.get({ resellerId, id, from, to }),
    close: () => {},
  };
}
