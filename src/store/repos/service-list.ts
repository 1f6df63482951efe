import type { Kysely } from 'kysely';
import type { Status } from '../../domain/status-machine.ts';
import type { Database } from '../schema.ts';
import { type Service, toService } from './services.ts';

/** What the operator's services list filters by (all optional), and where its page starts. */
export interface ServiceListQuery {
  readonly resellerId?: string;
  readonly status?: Status;
  /** An id prefix, a domain name or an IPv4 address (see listServicesPage). */
  readonly q?: string;
  /** The id of the last service of the previous page: this page goes on after it. */
  readonly beforeId?: string;
  readonly limit: number;
}

const IPV4 =
  /^(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}$/;
const ID_PREFIX = /^[0-9a-f][0-9a-f-]{0,35}$/;

/**
 * Services across resellers, newest first: ids are UUIDv7 (time-ordered, place-order.ts), so
 * the id alone is the key a page ends at and the next one starts after. Every filter is an index
 * range: one reseller's services `services_status` (reseller_id, id, status, ...), with a status
 * too the same range filtered in the index, one status `services_status_id` (status, id,
 * migration 009), neither the primary key. `q` matches a
 * service whose id starts with it (a range of the primary key), whose domain name is it
 * (`services_domain`), or that holds it as an address now (`ip_addresses`' unique address).
 */
export async function listServicesPage(db: Kysely<Database>, query: ServiceListQuery): Promise<Service[]> {
  let q = db.selectFrom('services').selectAll();
  if (query.resellerId !== undefined) q = q.where('reseller_id', '=', query.resellerId);
  const status = query.status;
  if (status !== undefined && query.resellerId !== undefined) {
    // Both filters: the reseller's range of `services_status`, whose third column is the status,
    // filtered inside the index. Said plainly, the planner may take `services_status_id` (status,
    // id) instead, which walks every reseller's services of that status to find this one's
    // (measured: 35x slower with 100,000 services). An expression no index holds leaves it one choice.
    q = q.where((eb) => eb(eb.fn.coalesce('status', eb.val('')), '=', status));
  } else if (status !== undefined) {
    q = q.where('status', '=', status);
  }
  if (query.beforeId !== undefined) q = q.where('id', '<', query.beforeId);
  const text = query.q;
  if (text !== undefined) {
    const lower = text.toLowerCase();
    q = q.where((eb) =>
      eb.or([
        eb('domain_name', 'in', [...new Set([text, lower])]),
        ...(ID_PREFIX.test(lower)
          ? // Ids are lower-case hex digits and hyphens: every id that starts with the prefix sorts
            // from it to it + 'g' (past 'f', and past '-' and the digits), in every collation.
            [eb.and([eb('id', '>=', lower), eb('id', '<', `${lower}g`)])]
          : []),
        ...(IPV4.test(text)
          ? [
              eb(
                'id',
                'in',
                eb
                  .selectFrom('ip_addresses')
                  .select('vm_id')
                  .where('address', '=', text)
                  // Held now: a released address has no vm_id (repos/ip-addresses.ts).
                  .where('vm_id', 'is not', null)
                  .$narrowType<{ vm_id: string }>(),
              ),
            ]
          : []),
      ]),
    );
  }
  const rows = await q.orderBy('id', 'desc').limit(query.limit).execute();
  return rows.map(toService);
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
