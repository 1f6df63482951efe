/**
 * Inserts whole rows with SQL built once. The text of `insert into t (a, b, ...) values
 * (?, ?, ...), (?, ?, ...)` depends only on the table, the columns, the number of rows and the
 * dialect, so Kysely builds and compiles it the first time and later inserts reuse the text with
 * new values. Building the 27-column services insert was a tenth of an order's CPU time
 * (bench/FINDINGS.md).
 */
import { CompiledQuery, type Insertable, type Kysely } from 'kysely';

/** SQL texts by dialect (Kysely's adapter, shared by a database and its transactions), then by shape. */
const texts = new WeakMap<object, Map<string, string>>();

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
  const columns = Object.keys(rows[0] as object);
  const values: unknown[] = [];
  for (const row of rows) {
    const r = row as Record<string, unknown>;
    if (Object.keys(r).length !== columns.length)
      throw new Error(`rows for ${table} differ in their columns`);
    for (const c of columns) {
      if (!(c in r)) throw new Error(`rows for ${table} differ in their columns`);
      values.push(r[c]);
    }
  }
  const adapter = db.getExecutor().adapter;
  let byShape = texts.get(adapter);
  if (!byShape) {
    byShape = new Map();
    texts.set(adapter, byShape);
  }
  const shape = `${table}(${columns.join()})x${rows.length}`;
  const text = byShape.get(shape);
  if (text !== undefined) {
    await db.executeQuery(CompiledQuery.raw(text, values));
    return;
  }
  // The table is generic, so Kysely cannot tie the rows to it here; the row type is checked above.
  const compiled = (db as unknown as Kysely<Record<string, Record<string, unknown>>>)
    .insertInto(table as string)
    .values(rows as unknown as Record<string, unknown>[])
    .compile();
  // Reusable only if every value went in as a parameter, in order (Kysely's way today).
  const reusable =
    compiled.parameters.length === values.length && compiled.parameters.every((p, i) => p === values[i]);
  if (reusable) byShape.set(shape, compiled.sql);
  await db.executeQuery(compiled);
}
