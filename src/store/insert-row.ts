/**
 * Inserts whole rows with SQL built once. The text of `insert into t (a, b, ...) values
 * (?, ?, ...), (?, ?, ...)` depends only on the table, the columns, the number of rows and the
 * dialect, so Kysely builds and compiles it the first time and later inserts reuse the text with
 * new values. Building the 27-column services insert was a tenth of an order's CPU time
 * (bench/FINDINGS.md). On PostgreSQL the text is also a named statement (pg-named.ts).
 */
import type { Insertable, Kysely } from 'kysely';
import { dialectOf } from './dialect-of.ts';
import { compiledShapes, type LooseBuilder, looseBuilder } from './loose-builder.ts';
import { nameStatement } from './pg-named.ts';

/** Rows of one table, all with the same columns. */
export type TableRows<DB> = {
  readonly [T in keyof DB & string]: { readonly table: T; readonly rows: readonly Insertable<DB[T]>[] };
}[keyof DB & string];

/** Any table's rows: the table is generic here, so Kysely cannot tie the rows to it (`valuesOf` checks them). */
interface AnyRows {
  readonly table: string;
  readonly rows: readonly object[];
}

/** Inserts one row. */
export function insertRow<DB, T extends keyof DB & string>(
  db: Kysely<DB>,
  table: T,
  row: Insertable<DB[T]>,
): Promise<void> {
  return insertRows(db, table, [row]);
}

/**
 * Inserts rows that all have the same columns, in one statement (so all or none of them).
 * The caller keeps the number of rows within the database's limit of parameters.
 */
export async function insertRows<DB, T extends keyof DB & string>(
  db: Kysely<DB>,
  table: T,
  rows: readonly Insertable<DB[T]>[],
): Promise<void> {
  if (rows.length === 0) return;
  await insertInOneStatement(db, [{ table, rows }]);
}

/**
 * Inserts the rows of several tables in one statement: the first tables' inserts in `WITH`,
 * the last one's as the statement itself. PostgreSQL only (SQLite has no INSERT in WITH): one
 * statement is atomic without a transaction of its own, so rows that belong together are
 * written all or none in one round trip instead of four (BEGIN, an insert per table, COMMIT).
 */
export async function insertTablesInOneStatement<DB>(
  db: Kysely<DB>,
  writes: readonly TableRows<DB>[],
): Promise<void> {
  const nonEmpty = writes.filter((w) => w.rows.length > 0);
  if (nonEmpty.length > 0) await insertInOneStatement(db, nonEmpty);
}

/** Each table's columns (those of its first row) and every value in order; throws if rows differ. */
function valuesOf(write: AnyRows, values: unknown[]): string[] {
  const columns = Object.keys(write.rows[0] as object);
  for (const row of write.rows) {
    const r = row as Record<string, unknown>;
    if (Object.keys(r).length !== columns.length)
      throw new Error(`rows for ${write.table} differ in their columns`);
    for (const c of columns) {
      if (!(c in r)) throw new Error(`rows for ${write.table} differ in their columns`);
      values.push(r[c]);
    }
  }
  return columns;
}

async function insertInOneStatement<DB>(db: Kysely<DB>, writes: readonly AnyRows[]): Promise<void> {
  const values: unknown[] = [];
  const shape = `insert ${writes.map((w) => `${w.table}(${valuesOf(w, values).join()})x${w.rows.length}`).join(';')}`;
  const byShape = compiledShapes(db);
  const known = byShape.get(shape);
  if (known !== undefined) {
    await db.executeQuery({ ...known, parameters: values });
    return;
  }
  const insert = (qc: LooseBuilder, w: AnyRows) => qc.insertInto(w.table).values(w.rows);
  // A database, or one with the earlier inserts in WITH.
  let builder = looseBuilder(db);
  writes.slice(0, -1).forEach((w, i) => {
    builder = builder.with(`w${i}`, (qc) => insert(qc, w));
  });
  const compiled = insert(builder, writes[writes.length - 1] as AnyRows).compile();
  // Reusable only if every value went in as a parameter, in order (Kysely's way today).
  const reusable =
    compiled.parameters.length === values.length && compiled.parameters.every((p, i) => p === values[i]);
  if (reusable) {
    // On PostgreSQL a named statement: parsed once per connection (pg-named.ts). The
    // shapes are bounded: the tables' column sets, up to the groups' most rows (group-insert.ts).
    if (dialectOf(db) === 'postgres') nameStatement(compiled.sql);
    byShape.set(shape, compiled);
  }
  await db.executeQuery(compiled);
}
