import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Reverse DNS: `service_ptrs` holds the PTR records a reseller (or an operator) set for a
 * service's addresses, one row per address. An address without a row has the default PTR (the
 * operator's pattern, VRP_RDNS_DEFAULT), or none. `zone` is the reverse zone the record was
 * written to, kept so that the record can be removed once the address, and the pool that named
 * its zone, are gone. The DNS server holds the records themselves; a row is written only after
 * the DNS server took the record.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('service_ptrs')
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('ptr', 'text', (c) => c.notNull())
    .addColumn('zone', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('service_ptrs_pk', ['service_id', 'address'])
    .execute();
}
