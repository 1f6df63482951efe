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
function storeKey<DB>(db: Kysely<DB>): object {
  return db.getExecutor().adapter;
}

/**
 * A value kept per store (storeKey): `make` runs the first time a store's database or one of its
 * transactions asks, and each later call answers what it made. What is compiled, built or read
 * once per store (statements by shape, prepared statements) is kept this way.
 */
export function perStore<V>(make: () => V): <DB>(db: Kysely<DB>) => V;
export function perStore<V, DB>(make: (db: Kysely<DB>) => V): (db: Kysely<DB>) => V;
export function perStore<V>(make: (db: Kysely<never>) => V): (db: Kysely<never>) => V {
  const kept = new WeakMap<object, V>();
  return (db) => {
    const key = storeKey(db);
    let value = kept.get(key);
    if (value === undefined) {
      value = make(db);
      kept.set(key, value);
    }
    return value;
  };
}
