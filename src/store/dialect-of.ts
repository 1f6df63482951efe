import { type Kysely, PostgresAdapter } from 'kysely';

/** The two SQL dialects the store runs on. */
export type DialectName = 'sqlite' | 'postgres';

/**
 * The dialect behind a database or transaction, for the few statements that must differ (a
 * migration's column types, the event feed's visibility rule). Read from Kysely's adapter, which a
 * database and its transactions share, so code that gets only a `Kysely` need not be told.
 */
export function dialectOf<DB>(db: Kysely<DB>): DialectName {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/**
 * What a database and its transactions share, and another store's database does not (Kysely's
 * adapter, made per database): the key of what is kept per store.
 */
export function storeKey<DB>(db: Kysely<DB>): object {
  return db.getExecutor().adapter;
}
