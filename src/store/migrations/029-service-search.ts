import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect-of.ts';

// Released migrations are never edited; add a new numbered file instead.

/**
 * The operator's services list: search by domain prefix and substring, sorted pages, filters by
 * product, and who started each job (docs/design/contract.md#operator-api).
 *
 * Indexes, so that every page is an index range or a bounded set with a million services
 * (store/repos/service-list.ts says which query takes which):
 * - `services_domain_id` (domain_name, id), byte order (PostgreSQL: `COLLATE "C"`, whatever the
 *   database's locale; SQLite's own order is bytes): domain prefixes as a range, and pages
 *   sorted by domain. It replaces `services_domain` (domain_name), which it covers.
 * - substrings: on PostgreSQL a `pg_trgm` GIN index on domain_name (`LIKE '%...%'`); the
 *   extension ships with PostgreSQL (Debian's postgresql package) and is trusted, so the
 *   database's owner may create it. On SQLite an FTS5 table with the `trigram` tokenizer,
 *   `services_domain_search`, whose rows are the services' rowids (external content: it stores
 *   only the index), kept in step by triggers on insert, delete and a change of domain name, and
 *   built here from the services already stored.
 * - `services_product_id` (product_id, id): one product's services, newest first.
 *
 * `jobs.started_by_type`, `started_by_id`, `started_by_name`: who asked for the job, as the audit
 * log names actors (an operator, a reseller's application, the CLI's user, or the system with the
 * part of it that acted: `scheduler`, `evacuation`, `rescue-expiry`, `traffic`). Null for jobs
 * queued before: nothing recorded who started them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
    await sql`CREATE INDEX services_domain_id ON services (domain_name COLLATE "C", id)`.execute(db);
    await sql`CREATE INDEX services_domain_trgm ON services USING gin (domain_name gin_trgm_ops)`.execute(db);
  } else {
    await db.schema.createIndex('services_domain_id').on('services').columns(['domain_name', 'id']).execute();
    await sql`CREATE VIRTUAL TABLE services_domain_search USING fts5(domain_name, content='services', content_rowid='rowid', tokenize='trigram', detail='none')`.execute(
      db,
    );
    await sql`CREATE TRIGGER services_domain_search_insert AFTER INSERT ON services BEGIN
      INSERT INTO services_domain_search (rowid, domain_name) VALUES (new.rowid, new.domain_name);
    END`.execute(db);
    await sql`CREATE TRIGGER services_domain_search_delete AFTER DELETE ON services BEGIN
      INSERT INTO services_domain_search (services_domain_search, rowid, domain_name) VALUES ('delete', old.rowid, old.domain_name);
    END`.execute(db);
    await sql`CREATE TRIGGER services_domain_search_update AFTER UPDATE OF domain_name ON services BEGIN
      INSERT INTO services_domain_search (services_domain_search, rowid, domain_name) VALUES ('delete', old.rowid, old.domain_name);
      INSERT INTO services_domain_search (rowid, domain_name) VALUES (new.rowid, new.domain_name);
    END`.execute(db);
    await sql`INSERT INTO services_domain_search (services_domain_search) VALUES ('rebuild')`.execute(db);
  }
  await db.schema.dropIndex('services_domain').execute();
  await db.schema.createIndex('services_product_id').on('services').columns(['product_id', 'id']).execute();
  for (const column of ['started_by_type', 'started_by_id', 'started_by_name']) {
    await db.schema.alterTable('jobs').addColumn(column, 'text').execute();
  }
}
