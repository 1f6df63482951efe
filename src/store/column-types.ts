/**
 * PostgreSQL: the type of each column of the store's tables, read from the catalog once the
 * store is migrated (openAndMigrate). A statement that takes a column's values as one array
 * parameter (gated-write.ts, the guarded writes of several jobs) must name the array's type,
 * where a plain parameter takes its column's type from where it stands. Kept per store, by the
 * adapter its database and every transaction of it share (as dialect-of.ts reads the dialect).
 */
import { type Kysely, sql } from 'kysely';
import { perStore } from './dialect-of.ts';
import type { Database } from './schema.ts';

/** By `table.column`; empty until learnColumnTypes has read the store's catalog. */
const typesOf = perStore(() => new Map<string, string>());

/** Reads the types of the columns of the tables in the store's schema (the first of its search path). */
export async function learnColumnTypes(db: Kysely<Database>): Promise<void> {
  const { rows } = await sql<{ t: string; c: string; type: string }>`
    select c.relname as t, a.attname as c, format_type(a.atttypid, a.atttypmod) as type
    from pg_attribute a join pg_class c on c.oid = a.attrelid
    where c.relnamespace = current_schema()::regnamespace and c.relkind = 'r'
      and a.attnum > 0 and not a.attisdropped`.execute(db);
  const types = typesOf(db);
  types.clear();
  for (const r of rows) types.set(`${r.t}.${r.c}`, r.type);
}

/**
 * The type of `table.column` (`text`, `bigint`, ...) in the store of `db`; undefined when the
 * store's types were not read (a store opened without openAndMigrate) or there is no such column.
 */
export function columnType(db: Kysely<Database>, table: string, column: string): string | undefined {
  return typesOf(db).get(`${table}.${column}`);
}
