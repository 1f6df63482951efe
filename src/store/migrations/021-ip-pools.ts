import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Address pools as records, managed by operators instead of one setting.
 *
 * `ip_pools`: one IPv4 range or one IPv6 prefix. IPv4: `network` (CIDR), `gateway`,
 * `first_address`/`last_address` (the part handed out), `reserved` (a JSON array of addresses
 * never handed out). IPv6: `network` (the pool's prefix), `gateway` (what the guests route
 * through), `assign_prefix_length` (the size of the prefix each service gets, 64 by default);
 * the IPv4-only columns are null.
 *
 * `ip_pool_hosts`: which hosts a pool serves.
 *
 * `ip_addresses.pool_id`: the pool an IPv4 address belongs to. Rows from before this migration
 * have none until the server, at start, turns the old setting (VRP_SIM_IP_POOL) into a pool
 * record that owns them: existing services keep their addresses.
 *
 * `ipv6_prefixes`: the prefixes handed out of IPv6 pools, by their index in the pool (the
 * index-th prefix of `assign_prefix_length` bits); rows are made on first use and kept when
 * released (`vm_id` null), like IPv4 addresses. `address` is the service's address in it (the
 * prefix's first address after the subnet-router anycast one: `...::1`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('ip_pools')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('family', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('gateway', 'text', (c) => c.notNull())
    .addColumn('first_address', 'text')
    .addColumn('last_address', 'text')
    .addColumn('reserved', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('assign_prefix_length', 'integer')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('ip_pool_hosts')
    .addColumn('pool_id', 'text', (c) => c.notNull())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('ip_pool_hosts_pk', ['pool_id', 'host_id'])
    .execute();
  await db.schema.createIndex('ip_pool_hosts_host').on('ip_pool_hosts').column('host_id').execute();

  await db.schema.alterTable('ip_addresses').addColumn('pool_id', 'text').execute();
  await db.schema
    .createIndex('ip_addresses_pool_free')
    .on('ip_addresses')
    .columns(['pool_id', 'vm_id', 'released_at', 'address_num'])
    .execute();

  await db.schema
    .createTable('ipv6_prefixes')
    .addColumn('pool_id', 'text', (c) => c.notNull())
    .addColumn('idx', 'bigint', (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull().unique())
    .addColumn('address', 'text', (c) => c.notNull().unique())
    .addColumn('vm_id', 'text')
    .addColumn('allocated_at', 'bigint')
    .addColumn('released_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('ipv6_prefixes_pk', ['pool_id', 'idx'])
    .execute();
  await db.schema.createIndex('ipv6_prefixes_vm').on('ipv6_prefixes').column('vm_id').execute();
}
