import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** Addresses `first` to `last` (inclusive) as numbers: the part of the table a pool hands out. */
export interface AddressRange {
  readonly first: number;
  readonly last: number;
}

/** How many addresses of the range the table has. */
export async function countPoolAddresses(db: Kysely<Database>, range: AddressRange): Promise<number> {
  const row = await db
    .selectFrom('ip_addresses')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('address_num', '>=', range.first)
    .where('address_num', '<=', range.last)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Adds addresses the pool does not have yet (idempotent: several processes may start at once). */
export async function insertPoolAddresses(
  db: Kysely<Database>,
  addresses: { num: number; text: string }[],
): Promise<void> {
  for (let i = 0; i < addresses.length; i += 500) {
    const chunk = addresses.slice(i, i + 500);
    await db
      .insertInto('ip_addresses')
      .values(
        chunk.map((a) => ({
          address_num: a.num,
          address: a.text,
          vm_id: null,
          allocated_at: null,
          released_at: 0,
        })),
      )
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

/**
 * The VM's addresses in allocation order (the first is primary): `allocated_at` is strictly
 * increasing among one VM's addresses (see `lastAllocatedAt`), the address only breaks ties of rows
 * written before that rule.
 */
export async function addressesOf(db: Kysely<Database>, vmId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('ip_addresses')
    .select('address')
    .where('vm_id', '=', vmId)
    .orderBy('allocated_at')
    .orderBy('address_num')
    .execute();
  return rows.map((r) => r.address);
}

/** When the VM's latest address was allocated; 0 if it has none. */
export async function lastAllocatedAt(db: Kysely<Database>, vmId: string): Promise<number> {
  const row = await db
    .selectFrom('ip_addresses')
    .select((eb) => eb.fn.max('allocated_at').as('at'))
    .where('vm_id', '=', vmId)
    .executeTakeFirst();
  return Number(row?.at ?? 0);
}

/** The free address of the range to hand out next: never used, or released longest ago. */
export async function nextFreeAddress(
  db: Kysely<Database>,
  range: AddressRange,
): Promise<number | undefined> {
  const row = await db
    .selectFrom('ip_addresses')
    .select('address_num')
    .where('vm_id', 'is', null)
    .where('address_num', '>=', range.first)
    .where('address_num', '<=', range.last)
    // Never used (released_at 0) first, then released longest ago; the (vm_id, released_at, address_num) index serves it.
    .orderBy('released_at')
    .orderBy('address_num')
    .limit(1)
    .executeTakeFirst();
  return row?.address_num;
}

/** Takes an address for a VM if it is still free; false if someone else was faster. `at` becomes its `allocated_at`. */
export async function claimAddress(
  db: Kysely<Database>,
  num: number,
  vmId: string,
  at: number,
): Promise<boolean> {
  const r = await db
    .updateTable('ip_addresses')
    .set({ vm_id: vmId, allocated_at: at })
    .where('address_num', '=', num)
    .where('vm_id', 'is', null)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

export async function releaseAddresses(
  db: Kysely<Database>,
  vmId: string,
  now: number,
  addresses?: string[],
): Promise<void> {
  let q = db
    .updateTable('ip_addresses')
    .set({ vm_id: null, allocated_at: null, released_at: now })
    .where('vm_id', '=', vmId);
  if (addresses) {
    if (addresses.length === 0) return;
    q = q.where('address', 'in', addresses);
  }
  await q.execute();
}
