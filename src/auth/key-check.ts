import type { Kysely } from 'kysely';
import { ConfigError } from '../config.ts';
import type { Database } from '../store/schema.ts';

const META_KEY = 'key_check';

/**
 * Refuses a master key other than the one the store was first used with: with the wrong key,
 * every token would answer 401 and every stored password would fail to decrypt. The first
 * process records its key's check value; the insert is a no-op when one is there already, so
 * processes starting at once agree on whichever came first.
 *
 * @param keySource how the key was given, for the message (VRP_SECRET_KEY or the key file)
 * @param location where the store is, for the message
 */
export async function checkKeyAgainstStore(
  db: Kysely<Database>,
  check: string,
  keySource: string,
  location: string,
): Promise<void> {
  await db
    .insertInto('meta')
    .values({ key: META_KEY, value: check })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const stored = await db
    .selectFrom('meta')
    .select('value')
    .where('key', '=', META_KEY)
    .executeTakeFirstOrThrow();
  if (stored.value !== check) {
    throw new ConfigError(
      `${keySource} is not the key this store (${location}) was first used with: ` +
        'set VRP_SECRET_KEY to that key (tokens and stored passwords need it)',
    );
  }
}
