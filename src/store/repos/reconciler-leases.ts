import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * A host's reconciler lease (migration 011): who reconciles the host's power states now.
 * Times are real time (Date.now()), as job leases are, whatever the server's clock says.
 */

/**
 * Takes the host for `owner` until `until` if nobody holds it (no row yet, or a lease that
 * expired at `realNow`); false if another holder's lease still runs. A conditional update, so
 * of several processes claiming at once exactly one gets it, on SQLite and PostgreSQL.
 */
export async function claimHostLease(
  db: Kysely<Database>,
  hostId: string,
  owner: string,
  realNow: number,
  until: number,
): Promise<boolean> {
  // The row exists from the first claim on; a concurrent insert of it is no conflict.
  await db
    .insertInto('reconciler_leases')
    .values({ host_id: hostId, locked_by: null, locked_until: 0 })
    .onConflict((oc) => oc.column('host_id').doNothing())
    .execute();
  const r = await db
    .updateTable('reconciler_leases')
    .set({ locked_by: owner, locked_until: until })
    .where('host_id', '=', hostId)
    .where('locked_until', '<=', realNow)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Extends `owner`'s lease to `until`; false if it has lost the host (its lease expired and another took it). */
export async function renewHostLease(
  db: Kysely<Database>,
  hostId: string,
  owner: string,
  until: number,
): Promise<boolean> {
  const r = await db
    .updateTable('reconciler_leases')
    .set({ locked_until: until })
    .where('host_id', '=', hostId)
    .where('locked_by', '=', owner)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/**
 * Ends `owner`'s pass over the host: nobody may claim it before `nextAt` (real time), when its
 * next pass is due, so that of several processes only one lists the host per interval.
 */
export async function releaseHostLease(
  db: Kysely<Database>,
  hostId: string,
  owner: string,
  nextAt: number,
): Promise<void> {
  await db
    .updateTable('reconciler_leases')
    .set({ locked_by: null, locked_until: nextAt })
    .where('host_id', '=', hostId)
    .where('locked_by', '=', owner)
    .execute();
}
