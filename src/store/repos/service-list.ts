import { type Expression, type ExpressionBuilder, type Kysely, type SqlBool, sql } from 'kysely';
import type { Status } from '../../domain/status-machine.ts';
import { dialectOf } from '../dialect-of.ts';
import type { Database } from '../schema.ts';
import { type Service, toService } from './services.ts';

/**
 * The orders of the operator's services list: by creation (ids are UUIDv7, time-ordered, so the
 * id is the key), by domain name (bytes: `a` < `b`, digits before letters) or by status (its
 * name), each ascending or, with `-`, descending. Ties are broken by the id in the same direction.
 */
export const SERVICE_SORTS = ['-created', 'created', 'domain', '-domain', 'status', '-status'] as const;
export type ServiceSort = (typeof SERVICE_SORTS)[number];

/** How `q` matches domain names: anywhere in the name, or at its start only. */
export const DOMAIN_MATCHES = ['contains', 'prefix'] as const;
export type DomainMatch = (typeof DOMAIN_MATCHES)[number];

/** A substring search needs at least this many characters (a trigram); a shorter `q` matches prefixes. */
export const MIN_SUBSTRING = 3;

/** Totals count up to this many; more is told as "more than". */
export const TOTAL_CAP = 10_000;

/** Where a page starts: after, or before, the service whose sort key is `key` and id `id`. */
export interface ServiceListFrom {
  readonly direction: 'after' | 'before';
  readonly key: string;
  readonly id: string;
}

/** What the operator's services list filters by (all optional), its order and where its page starts. */
export interface ServiceListQuery {
  readonly resellerId?: string | undefined;
  readonly status?: Status | undefined;
  readonly hostId?: string | undefined;
  readonly productId?: string | undefined;
  /** An id prefix, an IPv4 address a service holds, or (part of) a domain name (see listServices). */
  readonly q?: string | undefined;
  readonly match?: DomainMatch | undefined;
  readonly sort: ServiceSort;
  readonly from?: ServiceListFrom | undefined;
  readonly limit: number;
}

/** A page, in the list's order; `more`: there are services beyond it in the direction it was read. */
export interface ServiceListPage {
  readonly services: Service[];
  readonly more: boolean;
  /** How many services the filters match, at most TOTAL_CAP; `capped`: more than that. */
  readonly total: number;
  readonly capped: boolean;
}

/** The sort key a page's cursor holds for `service` in order `sort` (its id for the creation order). */
export function sortKeyOf(service: Service, sort: ServiceSort): string {
  const by = sort.replace('-', '');
  return by === 'domain' ? service.domainName : by === 'status' ? service.status : service.id;
}

const IPV4 =
  /^(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}$/;
const ID_PREFIX = /^[0-9a-f][0-9a-f-]{0,35}$/;
/** What a stored domain name is made of (lower case; domain/orders.ts): `q` with anything else names none. */
const DOMAIN_TEXT = /^[a-z0-9.-]+$/;

type Eb = ExpressionBuilder<Database, 'services'>;

/** How `q` is searched: its branches, each matching a set of services (any of them is a match). */
interface Search {
  /** Domain names that start with `prefix`: the range [prefix, prefix with its last character + 1). */
  readonly prefix?: readonly [string, string];
  /** Domain names holding `contains` (at least MIN_SUBSTRING characters). */
  readonly contains?: string;
  /** Ids that start with it: the range [it, it + 'g'), past every hex digit and hyphen. */
  readonly idPrefix?: string;
  /** The services holding the address `q` now. */
  readonly ids?: readonly string[];
}

async function searchOf(db: Kysely<Database>, q: string, match: DomainMatch): Promise<Search> {
  const lower = q.toLowerCase();
  let search: Search = {};
  if (DOMAIN_TEXT.test(lower)) {
    if (match === 'contains' && lower.length >= MIN_SUBSTRING) search = { contains: lower };
    else {
      const end = `${lower.slice(0, -1)}${String.fromCharCode(lower.charCodeAt(lower.length - 1) + 1)}`;
      search = { prefix: [lower, end] };
    }
  }
  if (ID_PREFIX.test(lower)) search = { ...search, idPrefix: lower };
  if (IPV4.test(q)) {
    const held = await db
      .selectFrom('ip_addresses')
      .select('vm_id')
      .where('address', '=', q)
      // Held now: a released address has no vm_id (repos/ip-addresses.ts).
      .where('vm_id', 'is not', null)
      .$narrowType<{ vm_id: string }>()
      .execute();
    search = { ...search, ids: held.map((r) => r.vm_id) };
  }
  return search;
}

/**
 * The domain name as the byte-ordered index `services_domain_id` holds it (migration 029): on
 * PostgreSQL in the "C" collation whatever the database's locale, so prefixes are ranges and
 * the domain order is the same on both stores.
 */
function domainExpr(postgres: boolean): Expression<string> {
  return postgres ? sql<string>`services.domain_name collate "C"` : sql<string>`services.domain_name`;
}

/** The services matching any branch of `search`, as one condition on `services`' columns. */
function searchCondition(eb: Eb, search: Search, postgres: boolean): Expression<SqlBool> {
  const any: Expression<SqlBool>[] = [];
  const domain = domainExpr(postgres);
  if (search.prefix)
    any.push(eb.and([eb(domain, '>=', search.prefix[0]), eb(domain, '<', search.prefix[1])]));
  if (search.contains !== undefined) any.push(eb('domain_name', 'like', `%${search.contains}%`));
  if (search.idPrefix !== undefined)
    any.push(eb.and([eb('id', '>=', search.idPrefix), eb('id', '<', `${search.idPrefix}g`)]));
  if (search.ids && search.ids.length > 0) any.push(eb('id', 'in', search.ids));
  return eb.or(any);
}

/**
 * SQLite: the rowids of the services matching `search`, each branch read from its index (a
 * substring from the trigram table `services_domain_search`, a domain prefix from
 * `services_domain_id`, an id prefix from the primary key).
 */
function candidateRowids(search: Search) {
  const parts = [];
  if (search.contains !== undefined)
    parts.push(
      sql`select rowid from services_domain_search where domain_name like ${`%${search.contains}%`}`,
    );
  if (search.prefix)
    parts.push(
      sql`select rowid from services where domain_name >= ${search.prefix[0]} and domain_name < ${search.prefix[1]}`,
    );
  if (search.idPrefix !== undefined)
    parts.push(
      sql`select rowid from services where id >= ${search.idPrefix} and id < ${`${search.idPrefix}g`}`,
    );
  if (search.ids && search.ids.length > 0)
    parts.push(sql`select rowid from services where id in (${sql.join(search.ids.map((id) => sql`${id}`))})`);
  return sql.join(parts, sql` union `);
}

function isEmpty(search: Search): boolean {
  return (
    search.prefix === undefined &&
    search.contains === undefined &&
    search.idPrefix === undefined &&
    (search.ids?.length ?? 0) === 0
  );
}

/**
 * A page of services across resellers, and how many the filters match.
 *
 * Every filter and order is an index range, with a million services: one reseller's
 * `services_status` (reseller_id, id, status, ...), one status `services_status_id` (status,
 * id), one product `services_product_id` (product_id, id), one host `services_host_status`
 * (host_id, status: a host holds what its room allows, hundreds, ordered after reading), the
 * creation order the primary key, the domain order `services_domain_id`. The page starts after
 * (or before) the sort key and id of the cursor's service: a range of the same index, so
 * services added meanwhile neither shift a page nor are skipped or repeated.
 *
 * `q` matches services whose domain name contains it (`match` `contains`, the default; a `q`
 * shorter than MIN_SUBSTRING matches at the start only) or starts with it (`prefix`), whose id
 * starts with it, or that hold it as an IPv4 address now.
 * - PostgreSQL: one condition, each branch indexed (`pg_trgm`'s GIN index for a substring, the
 *   "C"-collated `services_domain_id` for a prefix, the primary key for ids); the planner picks
 *   between reading the matches and walking the order's index.
 * - SQLite, which cannot weigh the two: the matches' rowids are read first (up to TOTAL_CAP + 1,
 *   from their indexes), once: the substring's trigram index is the costly read of a search, and
 *   it grows with the store. A search matching at most TOTAL_CAP services reads those by rowid,
 *   filters and orders them (bounded work however large the store), and a search with no other
 *   filter has its total in their number; one matching more walks the order's index and tests
 *   each service (at least one in 1 + store / TOTAL_CAP matches, so a page of 100 reads a
 *   bounded share of the store).
 *
 * The total counts up to TOTAL_CAP + 1 matches of the same query (without the page's start),
 * so it costs at most that many index entries (or, for a search matching more than TOTAL_CAP
 * with other filters, a walk of those filters' range).
 */
export async function listServices(db: Kysely<Database>, query: ServiceListQuery): Promise<ServiceListPage> {
  const postgres = dialectOf(db) === 'postgres';
  const search = query.q === undefined ? undefined : await searchOf(db, query.q, query.match ?? 'contains');
  if (search && isEmpty(search)) return { services: [], more: false, total: 0, capped: false };

  // SQLite: a search's few matches, read once from their indexes and then by rowid; or, when they
  // are many, a walk of the order's index.
  let matched: string | undefined;
  let matches = 0;
  if (search && !postgres) {
    const found = await sql<{
      rowid: number;
    }>`select rowid from (${candidateRowids(search)}) limit ${TOTAL_CAP + 1}`.execute(db);
    matches = found.rows.length;
    if (matches === 0) return { services: [], more: false, total: 0, capped: false };
    if (matches <= TOTAL_CAP) matched = JSON.stringify(found.rows.map((r) => r.rowid));
  }

  const filtered = () => {
    let q = db.selectFrom('services');
    const { resellerId, status } = query;
    if (resellerId !== undefined) q = q.where('reseller_id', '=', resellerId);
    if (status !== undefined && resellerId !== undefined) {
      // Both filters: the reseller's range of `services_status`, whose third column is the status,
      // filtered inside the index. Said plainly, the planner may take `services_status_id` (status,
      // id) instead, which walks every reseller's services of that status to find this one's
      // (measured: 35x slower with 100,000 services). An expression no index holds leaves it one choice.
      q = q.where((eb) => eb(eb.fn.coalesce('status', eb.val('')), '=', status));
    } else if (status !== undefined) {
      q = q.where('status', '=', status);
    }
    if (query.hostId !== undefined) q = q.where('host_id', '=', query.hostId);
    if (query.productId !== undefined) q = q.where('product_id', '=', query.productId);
    // The rowids read above, and the search's own condition again: a rowid freed since by a
    // deletion could name another service by now.
    if (matched !== undefined)
      q = q.where(sql<SqlBool>`services.rowid in (select value from json_each(${matched}))`);
    if (search) q = q.where((eb) => searchCondition(eb, search, postgres));
    return q;
  };

  const by = query.sort.replace('-', '');
  const descending = query.sort.startsWith('-');
  const backwards = query.from?.direction === 'before';
  const ascending = descending === backwards;
  const dir = ascending ? 'asc' : 'desc';
  const keyExpr: Expression<string> | undefined =
    by === 'domain' ? domainExpr(postgres) : by === 'status' ? sql<string>`services.status` : undefined;

  let page = filtered().selectAll('services');
  const from = query.from;
  if (from) {
    const [gt, ge] = ascending ? (['>', '>='] as const) : (['<', '<='] as const);
    page = page.where((eb) =>
      keyExpr === undefined
        ? eb('id', gt, from.id)
        : eb.and([eb(keyExpr, ge, from.key), eb.or([eb(keyExpr, gt, from.key), eb('id', gt, from.id)])]),
    );
  }
  if (keyExpr !== undefined) page = page.orderBy(keyExpr, dir);
  const rows = await page
    .orderBy('id', dir)
    .limit(query.limit + 1)
    .execute();

  const onlySearch =
    query.resellerId === undefined &&
    query.status === undefined &&
    query.hostId === undefined &&
    query.productId === undefined;
  let total: number;
  // A search alone counts what its indexes held (at most TOTAL_CAP + 1 read).
  if (search && !postgres && onlySearch) total = matches;
  else {
    const counted = await db
      .selectFrom(
        filtered()
          .select(sql<number>`1`.as('one'))
          .limit(TOTAL_CAP + 1)
          .as('m'),
      )
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    total = Number(counted.n);
  }

  const shown = rows.slice(0, query.limit).map(toService);
  if (backwards) shown.reverse();
  return {
    services: shown,
    more: rows.length > query.limit,
    total: Math.min(total, TOTAL_CAP),
    capped: total > TOTAL_CAP,
  };
}

/** How many services there are of each status (statuses with none are absent): the console's overview. */
export async function countServicesByStatus(db: Kysely<Database>): Promise<Map<Status, number>> {
  // `services_status_id` (status, id) holds every service: the count reads that index, not the rows.
  const rows = await db
    .selectFrom('services')
    .select(['status', (eb) => eb.fn.countAll<number | string>().as('n')])
    .groupBy('status')
    .execute();
  return new Map(rows.map((r) => [r.status, Number(r.n)]));
}
