import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect-of.ts';

// Released migrations are never edited; add a new numbered file instead.

/**
 * PostgreSQL: the domain substring index (`services_domain_trgm`, GIN) keeps at most 128 kB of
 * new entries in its pending list instead of the server's default 4 MB.
 *
 * GIN puts the entries of new rows in a pending list and merges them into the index in bulk
 * (`fastupdate`). Every search reads the whole list, whatever it looks for: with a million
 * services and the list at its 4 MB default (254 pages after a bulk load), the operator's
 * substring search read ~450 pages per query and took 2.3 ms per scan where it takes 0.46 ms
 * with the list merged (bench/FINDINGS.md). A list of 128 kB keeps a search's reading to at
 * most 16 pages, and inserts still merge in bulk (each merge is smaller, so the insert that
 * triggers one waits less). SQLite's FTS5 trigram table has no such list.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  await sql`ALTER INDEX services_domain_trgm SET (gin_pending_list_limit = 128)`.execute(db);
}
