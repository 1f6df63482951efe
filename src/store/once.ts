import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

/**
 * Runs `body` once for the store's whole life, whichever of several processes starting together
 * gets there first: the `meta` row `key` marks it done. Every later start costs one read, no
 * transaction. Among processes starting together, one inserts the marker (the others' inserts
 * wait for its commit, then find it there) and runs `body` in the same transaction, so a
 * failing `body` leaves no marker and the next start tries again.
 */
export async function once(
  db: Kysely<Database>,
  key: string,
  now: number,
  body: (tx: Transaction<Database>) => Promise<void>,
): Promise<void> {
  if (await db.selectFrom('meta').select('value').where('key', '=', key).executeTakeFirst()) return;
  await db.transaction().execute(async (tx) => {
    const claimed = await tx
      .insertInto('meta')
      .values({ key, value: String(now) })
      .onConflict((oc) => oc.column('key').doNothing())
      .returning('key')
      .executeTakeFirst();
    if (claimed) await body(tx);
  });
}
